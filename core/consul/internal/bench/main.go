// Command bench compares hashicorp's api.Semaphore with distsem's Consul
// backend on the same agent: acquisitions per second, utilization (the
// share of the limit's capacity that was held), wait p50/p99, how long a
// cancelled Acquire takes to return, and whether grants carry a token.
//
// Each worker stands for one process: it has its own semaphore value (so
// its own session) and loops acquire, hold, release.
//
//	consul agent -dev ... -http-port 23510 &
//	go run ./internal/bench -addr 127.0.0.1:23510 -runs 1x16x1ms,4x32x2ms -d 10s
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type run struct {
	limit, workers int
	hold           time.Duration
}

type result struct {
	acquisitions []acq // every grant, for the diagnostics
	acquired     int64
	held         time.Duration // summed over grants
	waits        []time.Duration
	tokens       int64 // grants with a token > 0
	errors       int64
	elapsed      time.Duration
	perSecond    float64
	utilisaton   float64
}

// impl is one semaphore implementation: newWorker makes one contender on
// the semaphore prefix of limit permits. A non-nil blocked is closed once
// the contender waits: when its first blocking query (one with an index)
// has been written to the agent, or for core.Local when it is queued.
type impl struct {
	name      string
	newWorker func(prefix string, limit int, blocked chan struct{}) (acquire func(ctx context.Context) (release func(), token int64, err error), close func())
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8500", "Consul HTTP address")
	runs := flag.String("runs", "1x16x1ms,4x32x2ms", "comma-separated limit x workers x hold")
	dur := flag.Duration("d", 10*time.Second, "duration of each run")
	cancels := flag.Int("cancels", 3, "cancellation samples per implementation")
	verbose := flag.Bool("v", false, "print HTTP requests per acquisition, by kind, to stderr")
	control := flag.Bool("control", false, "also run core.Local, in-process and FIFO, as a control: the wait spread that this machine's scheduler alone produces")
	flag.BoolVar(&logConflicts, "why", false, "log every failed transaction (409) with the time and the agent's reason, to stderr")
	agentPID := flag.Int("agentpid", 0, "the agent's process id: print the CPU time it and this process spent per acquisition (from /proc, 10 ms ticks)")
	only := flag.String("impls", "", "run only the implementations whose name contains one of these comma-separated words (default: all)")
	flag.BoolVar(&gzip, "gzip", true, "let the agent compress its responses (Go's transport asks for gzip by default)")
	cpuProfile := flag.String("cpuprofile", "", "write this process's CPU profile to the file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}

	client := newClient(*addr, nil)
	impls := []impl{hashicorp(client, *addr), distsem(client, *addr)}
	if *control {
		impls = append(impls, local())
	}
	if *only != "" {
		impls = slices.DeleteFunc(impls, func(im impl) bool {
			return !slices.ContainsFunc(strings.Split(*only, ","), func(w string) bool { return strings.Contains(im.name, w) })
		})
	}
	fmt.Printf("# %s, GOMAXPROCS=%s, agent %s\n", time.Now().UTC().Format(time.RFC3339), os.Getenv("GOMAXPROCS"), *addr)
	fmt.Println("| impl | limit | workers | hold | acq/s | utilization | wait p50 | wait p99 | p99/p50 | tokens | errors |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, spec := range strings.Split(*runs, ",") {
		r := parseRun(spec)
		for _, im := range impls {
			clear0 := snapshotCounts()
			agent0, self0 := cpuTime(*agentPID), cpuTime(os.Getpid())
			res := measure(im, r, *dur)
			if *agentPID > 0 {
				fmt.Fprintf(os.Stderr, "%s %v: CPU per acquisition: agent %v, this process %v\n", im.name, spec,
					((cpuTime(*agentPID) - agent0) / time.Duration(max(res.acquired, 1))).Round(10*time.Microsecond),
					((cpuTime(os.Getpid()) - self0) / time.Duration(max(res.acquired, 1))).Round(10*time.Microsecond))
			}
			if *verbose {
				fmt.Fprintf(os.Stderr, "%s %v: requests per acquisition: %s\n", im.name, spec, perAcq(clear0, snapshotCounts(), res.acquired))
				fmt.Fprintf(os.Stderr, "%s %v: %s\n", im.name, spec, diagnose(res.acquisitions))
				fmt.Fprintf(os.Stderr, "%s %v: request latency: %s\n", im.name, spec, latencies())
			}
			p50, p99 := pct(res.waits, 50), pct(res.waits, 99)
			ratio := 0.0
			if p50 > 0 {
				ratio = float64(p99) / float64(p50)
			}
			fmt.Printf("| %s | %d | %d | %v | %.1f | %.2f | %v | %v | %.1f | %d/%d | %d |\n", im.name, r.limit, r.workers, r.hold,
				res.perSecond, res.utilisaton, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), ratio,
				res.tokens, res.acquired, res.errors)
		}
	}
	fmt.Println()
	fmt.Println("| impl | cancellation latency samples | max |")
	fmt.Println("|---|---|---|")
	for _, im := range impls {
		ds := cancellation(im, *cancels)
		if len(ds) > 0 {
			fmt.Printf("| %s | %v | %v |\n", im.name, ds, slices.Max(ds))
		}
	}
}

func parseRun(s string) run {
	f := strings.Split(s, "x")
	if len(f) != 3 {
		log.Fatalf("bad run %q: want limit x workers x hold", s)
	}
	l, err1 := strconv.Atoi(f[0])
	w, err2 := strconv.Atoi(f[1])
	h, err3 := time.ParseDuration(f[2])
	if err := errors.Join(err1, err2, err3); err != nil {
		log.Fatalf("bad run %q: %v", s, err)
	}
	return run{l, w, h}
}

var seq atomic.Int64

func prefix(name string) string {
	return fmt.Sprintf("bench/%s-%d-%d", strings.ReplaceAll(name, " ", "-"), time.Now().UnixNano(), seq.Add(1))
}

func measure(im impl, r run, d time.Duration) result {
	p := prefix(im.name)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var mu sync.Mutex
	var res result
	var wg sync.WaitGroup
	start := time.Now()
	for range r.workers {
		acquire, closeW := im.newWorker(p, r.limit, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer closeW()
			for ctx.Err() == nil {
				t0 := time.Now()
				release, token, err := acquire(ctx)
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						res.errors++
						mu.Unlock()
					}
					continue
				}
				t1 := time.Now()
				wait := t1.Sub(t0)
				work(ctx, r.hold)
				t2 := time.Now()
				held := t2.Sub(t1)
				release()
				t3 := time.Now()
				mu.Lock()
				res.acquisitions = append(res.acquisitions, acq{t0, t1, t2, t3})
				res.acquired++
				res.held += held
				res.waits = append(res.waits, wait)
				if token > 0 {
					res.tokens++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.perSecond = float64(res.acquired) / res.elapsed.Seconds()
	res.utilisaton = res.held.Seconds() / (float64(r.limit) * res.elapsed.Seconds())
	return res
}

// cancellation fills a limit of 1, queues one waiter, cancels it once its
// blocking query is written to the agent, and measures how long its
// Acquire takes to return.
func cancellation(im impl, n int) []time.Duration {
	var ds []time.Duration
	for range n {
		p := prefix(im.name + "-cancel")
		acqH, closeH := im.newWorker(p, 1, nil)
		release, _, err := acqH(context.Background())
		if err != nil {
			log.Fatal(err)
		}
		blocked := make(chan struct{})
		acqW, closeW := im.newWorker(p, 1, blocked)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan time.Time, 1)
		go func() {
			if rel, _, err := acqW(ctx); err == nil {
				rel()
			}
			done <- time.Now()
		}()
		select {
		case <-blocked: // it waits in its blocking query
		case <-time.After(time.Minute):
			log.Fatalf("%s: the waiter sent no blocking query in a minute", im.name)
		}
		t0 := time.Now()
		cancel()
		ds = append(ds, (<-done).Sub(t0).Round(time.Millisecond))
		release()
		closeW()
		closeH()
	}
	return ds
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// latencies returns p50/p99 of the non-blocking requests' round trips
// since the last call (headers received; the body is read later).
func latencies() string {
	latMu.Lock()
	defer latMu.Unlock()
	var parts []string
	for k, ds := range lat {
		parts = append(parts, fmt.Sprintf("%s p50 %v p99 %v", k, pct(ds, 50).Round(10*time.Microsecond), pct(ds, 99).Round(10*time.Microsecond)))
	}
	clear(lat)
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func snapshotCounts() map[string]int64 {
	m := map[string]int64{}
	counts.Range(func(k, v any) bool { m[k.(string)] = v.(*atomic.Int64).Load(); return true })
	return m
}

func perAcq(before, after map[string]int64, acquired int64) string {
	var parts []string
	var total int64
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(d)/float64(max(acquired, 1))))
			if !strings.HasSuffix(k, " failed") { // counted in its kind already
				total += d
			}
		}
	}
	slices.Sort(parts)
	return fmt.Sprintf("%.2f total (%s)", float64(total)/float64(max(acquired, 1)), strings.Join(parts, ", "))
}

// cpuTime returns the user + system CPU time of process pid so far, from
// /proc (Linux), or 0.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil || pid <= 0 {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])) // fields from the state on
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return time.Duration(u+s) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// work stands for the holder's work: it takes d, or less if ctx (the run)
// ends first.
func work(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
