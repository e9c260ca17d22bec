package main

import (
	"bufio"
	"context"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// serverStats is what one redis-server reports at one instant: its CPU
// time (user + system, all threads) and, since the last CONFIG RESETSTAT,
// the script calls (EVAL, EVALSHA), their server time, and every command
// processed, nested ones included.
type serverStats struct {
	cpuSec      float64
	scripts     int64
	scriptUsec  int64
	commands    int64
	connections int64
}

// readStats reads INFO cpu, commandstats and clients.
func readStats(ctx context.Context, rdb *redis.Client) (serverStats, error) {
	info, err := rdb.Info(ctx, "cpu", "commandstats", "clients").Result()
	if err != nil {
		return serverStats{}, err
	}
	var s serverStats
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		switch {
		case k == "used_cpu_sys" || k == "used_cpu_user":
			f, _ := strconv.ParseFloat(v, 64)
			s.cpuSec += f
		case k == "connected_clients":
			s.connections, _ = strconv.ParseInt(v, 10, 64)
		case strings.HasPrefix(k, "cmdstat_") && k != "cmdstat_info" && k != "cmdstat_config":
			calls, usec := cmdstat(v)
			s.commands += calls
			if k == "cmdstat_evalsha" || k == "cmdstat_eval" {
				s.scripts += calls
				s.scriptUsec += usec
			}
		}
	}
	return s, sc.Err()
}

// cmdstat parses "calls=40001,usec=1007102,usec_per_call=25.18,...".
func cmdstat(v string) (calls, usec int64) {
	for _, kv := range strings.Split(v, ",") {
		k, n, _ := strings.Cut(kv, "=")
		switch k {
		case "calls":
			calls, _ = strconv.ParseInt(n, 10, 64)
		case "usec":
			usec, _ = strconv.ParseInt(n, 10, 64)
		}
	}
	return calls, usec
}
