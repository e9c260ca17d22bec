package main

import (
	"bufio"
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// cmdSample is Redis's INFO commandstats at one instant: calls of every
// command (scripts' nested commands included), and the EVALSHA calls and
// their server time.
type cmdSample struct {
	ok                bool
	calls             int64
	evalsha, evalUsec int64
}

// sampleCommands reads INFO commandstats from the standalone server at
// addr; ok is false when it cannot (a Cluster run, or an in-process
// backend).
func sampleCommands(c config) cmdSample {
	if c.cluster != "" || inProcess(c.backend) {
		return cmdSample{}
	}
	cl := redis.NewClient(&redis.Options{Addr: c.addr, MaxRetries: -1})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := cl.Info(ctx, "commandstats").Result()
	if err != nil {
		return cmdSample{}
	}
	s := cmdSample{ok: true}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		// cmdstat_evalsha:calls=40001,usec=1007102,usec_per_call=25.18,...
		name, rest, found := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !found || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		var calls, usec int64
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				calls = n
			case "usec":
				usec = n
			}
		}
		s.calls += calls
		if name == "cmdstat_evalsha" {
			s.evalsha, s.evalUsec = calls, usec
		}
	}
	return s
}

// commandCost returns the Redis commands and the scripts (EVALSHA) per
// acquisition and the server µs per EVALSHA between two samples, or zeros
// when not known.
func commandCost(a, b cmdSample, grants int) (perAcq, scriptsPerAcq, usecPerEval float64) {
	if !a.ok || !b.ok || grants == 0 {
		return 0, 0, 0
	}
	perAcq = float64(b.calls-a.calls) / float64(grants)
	n := b.evalsha - a.evalsha
	scriptsPerAcq = float64(n) / float64(grants)
	if n > 0 {
		usecPerEval = float64(b.evalUsec-a.evalUsec) / float64(n)
	}
	return perAcq, scriptsPerAcq, usecPerEval
}
