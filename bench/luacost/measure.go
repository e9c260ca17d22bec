package main

import (
	"bufio"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// sample is one variant's figures in one round.
type sample struct {
	evalsha float64            // usec_per_call of EVALSHA
	rate    float64            // measured iterations per second of wall time
	step    []float64          // SLOWLOG µs of each step: mean of the fastest 90%
	nested  map[string]cmdStat // nested commands (not EVALSHA, not harness commands)
}

type cmdStat struct {
	calls int64
	usec  int64
}

// The ids of distsem's roles are a process's: a base and a counter
// (core/redissem's newID), and "_n" after it for an Acquire with a note
// (the n roles).
const idBase = "B7KQ2M9X4CJ3H5TA."

func idOf(seq int, noted bool) string {
	id := idBase + strconv.FormatInt(int64(seq), 36)
	if noted {
		id += "_n"
	}
	return id
}

// ownerEvery is how often the o roles send the owner: a process with
// core.WithOwner's default sends it with about one acquire per lease TTL of
// each semaphore (10 s: one in 100 000 at 10 000 pairs/s), and with every
// heartbeat, which no role runs; once in ownerEvery acquires is more.
const ownerEvery = 1000

// argsFor returns the KEYS and ARGV of a step's role for holder id; nil for
// an unknown role (none: no KEYS or ARGV). distsem: the keys of core/redis_backend.go and the ARGV
// of core/redis_acquire.go (limit 1, default lease TTL 10 s, a deadline 1 h
// ahead, no probe; release with the tombstone TTL of the default op timeout,
// 4 s); oacq and ohacq are acq and hacq with the owner sent every
// ownerEvery acquires, nacq, nhacq and nrel the same with a note on every
// acquire. sacq and srel: bench/seedsem.
func argsFor(role, sem string, seq int) []any {
	tag := "luacost:{" + sem + "}:"
	keys := []string{tag + "m", tag + "h", tag + "q", tag + "p", tag + "f", tag + "r"}
	noted := strings.HasPrefix(role, "n") && role != "none"
	id := idOf(seq, noted)
	ch := "distsem:notify:b7kq2m9x4c"
	now := time.Now()
	var extra []any // ARGV after the probe: note, owner
	switch {
	case noted:
		extra = []any{"backup of db-3", ""}
	case strings.HasPrefix(role, "o") && (seq-1)%ownerEvery == 0:
		extra = []any{"", "host-1.example:4242"}
	}
	switch role {
	case "acq", "facq", "oacq", "nacq":
		return append(pack(keys, 1, ch, id, 1, 10000, 0, now.Add(time.Hour).UnixMicro(), "0"), extra...)
	case "rel", "frel", "nrel":
		return pack(keys, 1, ch, id, 4000)
	case "hacq", "ohacq", "nhacq": // the next id queues behind id, and rel of id hands off to it
		return append(pack(keys, 1, ch, idOf(seq+1, noted), 1, 10000, 0, now.Add(time.Hour).UnixMicro(), "0"), extra...)
	case "racq": // bench/refsem: holders zset, queue list; limit, id, ttl, channel
		r := "ref:{" + sem + "}:"
		return pack([]string{r + "h", r + "q"}, 1, id, 10000, ch)
	case "rrel":
		r := "ref:{" + sem + "}:"
		return pack([]string{r + "h", r + "q"}, 1, id, 10000)
	case "sacq":
		s := "seedsem:{" + sem + "}:"
		return pack([]string{s + "time", s + "sem", s + "seq"}, now.UnixMilli(), id, 1, now.Add(-10*time.Second).UnixMilli())
	case "none": // no KEYS, no ARGV
		return pack(nil)
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

// seqs holds each variant's own id sequence, so that hand-off chains
// (hacq) go on across rounds.
var seqs = map[int]int{}

// measure runs warm unmeasured iterations of v, resets the statistics, runs
// n measured ones and reads them back. Each variant has its own keys (sem
// "v<i>"), so variants do not share state. With pipe > 1 the steps of pipe
// iterations go in one pipeline; with pipe 1 each step is a round trip of
// its own, as a client sends them.
func measure(ctx context.Context, c *redis.Client, v variant, i, warm, n, pipe int, slow bool) sample {
	sem := fmt.Sprintf("v%d", i)
	seq := seqs[i]
	defer func() { seqs[i] = seq }()
	cmdOf := func(st step, seq int) []any {
		cmd := "evalsha"
		if isFunc(st.role) {
			cmd = "fcall"
		}
		return append([]any{cmd, st.sha}, argsFor(st.role, sem, seq)...)
	}
	run := func(count int) {
		if pipe <= 1 {
			for range count {
				seq++
				for _, st := range v.steps {
					if err := c.Do(ctx, cmdOf(st, seq)...).Err(); err != nil && err != redis.Nil {
						fail("variant %s: %v", v.name, err)
					}
				}
			}
			return
		}
		for done := 0; done < count; {
			p := c.Pipeline()
			for k := 0; k < pipe && done < count; k++ {
				seq++
				for _, st := range v.steps {
					p.Do(ctx, cmdOf(st, seq)...)
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
	t0 := time.Now()
	run(n)
	s := sample{nested: map[string]cmdStat{}, rate: float64(n) / time.Since(t0).Seconds()}
	if slow {
		logs, err := c.SlowLogGet(ctx, -1).Result()
		check(err)
		durs := make([][]float64, len(v.steps))
		for _, l := range logs {
			if len(l.Args) < 2 || !strings.EqualFold(l.Args[0], "evalsha") && !strings.EqualFold(l.Args[0], "fcall") {
				continue
			}
			for j, st := range v.steps {
				if l.Args[1] == st.sha {
					durs[j] = append(durs[j], float64(l.Duration.Microseconds()))
					break // two steps with one text: the first gets all
				}
			}
		}
		for _, d := range durs {
			s.step = append(s.step, trimmedMean(d, 0.9))
		}
	}
	info, err := c.Info(ctx, "commandstats").Result()
	check(err)
	var calls, usec int64
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
		case "evalsha", "fcall":
			calls += st.calls
			usec += st.usec
		case "config|resetstat", "config|set", "slowlog|get", "slowlog|reset", "info", "ping", "script|load", "function|load", "hello", "client|setinfo", "client|setname":
		default:
			s.nested[name] = st
		}
	}
	s.evalsha = float64(usec) / float64(max(calls, 1))
	return s
}

// isFunc reports whether role calls a function (FCALL) instead of a script.
func isFunc(role string) bool { return role == "facq" || role == "frel" }

// funcName is the function FCALL runs for role.
func funcName(role string) string { return "luacost_" + role[1:] }

// trimmedMean is the mean of the fastest keep share of d: a call during
// which the server was preempted (the machine is shared) takes
// milliseconds, and a few of them would dominate a plain mean.
func trimmedMean(d []float64, keep float64) float64 {
	if len(d) == 0 {
		return 0
	}
	sort.Float64s(d)
	n := max(1, int(float64(len(d))*keep))
	sum := 0.0
	for _, x := range d[:n] {
		sum += x
	}
	return sum / float64(n)
}
