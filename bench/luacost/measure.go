package main

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// sample is one variant's figures in one round.
type sample struct {
	evalsha float64            // usec_per_call of EVALSHA
	step    []float64          // SLOWLOG mean µs of each step
	nested  map[string]cmdStat // nested commands (not EVALSHA, not harness commands)
}

type cmdStat struct {
	calls int64
	usec  int64
}

// argsFor returns the KEYS and ARGV of a step's role for holder id; nil for
// an unknown role. distsem: the keys of core/redis_backend.go and the ARGV
// of core/redis_acquire.go (limit 1, default lease TTL 10 s, a deadline 1 h
// ahead, check 1; release with the tombstone TTL of the default op timeout,
// 4 s). The seed: bench/seedsem.
func argsFor(role, sem string, seq int) []any {
	tag := "luacost:{" + sem + "}:"
	keys := []string{tag + "m", tag + "h", tag + "q", tag + "qe", tag + "p"}
	id := fmt.Sprintf("b7kq2m9x4c%d", seq)
	ch := "distsem:notify:b7kq2m9x4c"
	now := time.Now()
	switch role {
	case "acq":
		return pack(keys, 1, ch, id, 1, 10000, 0, now.Add(time.Hour).UnixMicro(), "1")
	case "rel":
		return pack(keys, 1, ch, id, 4000)
	case "sacq":
		s := "seedsem:{" + sem + "}:"
		return pack([]string{s + "time", s + "sem", s + "seq"}, now.UnixMilli(), id, 1, now.Add(-10*time.Second).UnixMilli())
	case "srel":
		s := "seedsem:{" + sem + "}:"
		return pack([]string{s + "sem", s + "time", s + "wait"}, id)
	}
	return nil
}

// pack lays out EVALSHA's arguments after the sha: numkeys, keys, argv.
func pack(keys []string, argv ...any) []any {
	out := []any{len(keys)}
	for _, k := range keys {
		out = append(out, k)
	}
	return append(out, argv...)
}

var seq int

// measure runs warm unmeasured iterations of v, resets the statistics, runs
// n measured ones and reads them back. Each variant has its own keys (sem
// "v<i>"), so variants do not share state.
func measure(ctx context.Context, c *redis.Client, v variant, i, warm, n, pipe int, slow bool) sample {
	sem := fmt.Sprintf("v%d", i)
	run := func(count int) {
		for done := 0; done < count; {
			p := c.Pipeline()
			for k := 0; k < pipe && done < count; k++ {
				seq++
				for _, st := range v.steps {
					p.Do(ctx, append([]any{"evalsha", st.sha}, argsFor(st.role, sem, seq)...)...)
				}
				done++
			}
			cmds, err := p.Exec(ctx)
			for _, cmd := range cmds {
				if e := cmd.Err(); e != nil && e != redis.Nil {
					fail("variant %s: %v", v.name, e)
				}
			}
			if err != nil && err != redis.Nil {
				fail("variant %s: %v", v.name, err)
			}
		}
	}
	run(warm)
	check(c.ConfigResetStat(ctx).Err())
	check(c.SlowLogReset(ctx).Err())
	run(n)
	s := sample{nested: map[string]cmdStat{}}
	if slow {
		logs, err := c.SlowLogGet(ctx, -1).Result()
		check(err)
		sum := make([]float64, len(v.steps))
		cnt := make([]float64, len(v.steps))
		for _, l := range logs {
			if len(l.Args) < 2 || !strings.EqualFold(l.Args[0], "evalsha") {
				continue
			}
			for j, st := range v.steps {
				if l.Args[1] == st.sha {
					sum[j] += float64(l.Duration.Microseconds())
					cnt[j]++
					break // two steps with one text: the first gets all
				}
			}
		}
		for j := range sum {
			s.step = append(s.step, sum[j]/max(cnt[j], 1))
		}
	}
	info, err := c.Info(ctx, "commandstats").Result()
	check(err)
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		name, rest, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		var st cmdStat
		for _, kv := range strings.Split(rest, ",") {
			k, val, _ := strings.Cut(kv, "=")
			x, _ := strconv.ParseInt(val, 10, 64)
			switch k {
			case "calls":
				st.calls = x
			case "usec":
				st.usec = x
			}
		}
		switch name {
		case "evalsha":
			s.evalsha = float64(st.usec) / float64(max(st.calls, 1))
		case "config|resetstat", "config|set", "slowlog|get", "slowlog|reset", "info", "ping", "script|load", "hello", "client|setinfo", "client|setname":
		default:
			s.nested[name] = st
		}
	}
	return s
}
