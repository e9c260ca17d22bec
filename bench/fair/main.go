// Command fair measures fair queuing on the Redis semaphore: worker
// processes acquire one semaphore in flows and levels (scenarios.go), each
// grant is recorded on one multi-process timeline, and the figures of
// BENCHMARKS.md's fair-queuing section are computed from it: the limit
// kept (the most holders at once), each flow's share of grants and its
// waits, FIFO order within a flow, and the levels' reserves.
//
//	go run ./fair -scenario noisy -redis 127.0.0.1:7470
//	go run ./fair -scenario noisy -fifo   # the same workload with no flows named
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/redissem"
)

type config struct {
	scenario string
	addr     string
	name     string
	duration time.Duration
	fifo     bool
	results  string
	label    string
	child    int
	out      string
}

func main() {
	var c config
	flag.StringVar(&c.scenario, "scenario", "noisy", "noisy | weights | fifty | reserve | noreserve | distinct")
	flag.StringVar(&c.addr, "redis", "127.0.0.1:7470", "redis-server address")
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "length of the run")
	flag.BoolVar(&c.fifo, "fifo", false, "name no flow and no level: the same workload on the plain FIFO semaphore")
	flag.StringVar(&c.results, "results", "", "append the figures as a JSON line to this file")
	flag.StringVar(&c.label, "label", "", "label of the run in -results")
	flag.StringVar(&c.name, "name", "", "internal: semaphore name")
	flag.IntVar(&c.child, "child", -1, "internal: run as worker process i")
	flag.StringVar(&c.out, "out", "", "internal: the worker's timeline file")
	flag.Parse()
	sc, ok := scenarios[c.scenario]
	if !ok {
		fmt.Fprintf(os.Stderr, "fair: unknown scenario %q\n", c.scenario)
		os.Exit(2)
	}
	run := parent
	if c.child >= 0 {
		run = child
	}
	if err := run(c, sc); err != nil {
		fmt.Fprintln(os.Stderr, "fair:", err)
		os.Exit(1)
	}
}

// parent sets the semaphore up, runs one worker process per entry of
// sc.Procs, and reports.
func parent(c config, sc scenario) error {
	ctx := context.Background()
	if c.name == "" {
		c.name = fmt.Sprintf("fair-%s-%d", c.scenario, time.Now().UnixNano())
	}
	rdb := redis.NewClient(&redis.Options{Addr: c.addr})
	defer rdb.Close()
	memBefore := usedMemory(ctx, rdb)
	sem := redissem.New(rdb, c.name, sc.Limit)
	if err := sem.SetFairness(ctx, sc.Fairness); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "fair")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	type proc struct {
		cmd *exec.Cmd
		in  *os.File
		out *bufio.Scanner
	}
	var procs []proc
	for i := range sc.Procs {
		cmd := exec.Command(self, "-child", fmt.Sprint(i), "-scenario", c.scenario, "-redis", c.addr, "-name", c.name,
			"-duration", c.duration.String(), fmt.Sprintf("-fifo=%v", c.fifo), "-out", filepath.Join(dir, fmt.Sprint(i)))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		cmd.Stdin = r
		if err := cmd.Start(); err != nil {
			return err
		}
		r.Close()
		sc := bufio.NewScanner(stdout)
		if !sc.Scan() || sc.Text() != "ready" {
			return fmt.Errorf("worker %d did not start", i)
		}
		procs = append(procs, proc{cmd, w, sc})
	}
	start := time.Now().Add(200 * time.Millisecond).UnixNano()
	for _, p := range procs {
		fmt.Fprintln(p.in, start)
		p.in.Close()
	}
	peak := make(chan int64)
	stopSampling := make(chan struct{})
	go func() { // Redis memory, every 250 ms until the workers are done
		var m int64
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				peak <- m
				return
			case <-t.C:
				m = max(m, usedMemory(ctx, rdb))
			}
		}
	}()
	var heaps []string
	for i, p := range procs {
		if p.out.Scan() {
			heaps = append(heaps, p.out.Text())
		}
		if err := p.cmd.Wait(); err != nil {
			return fmt.Errorf("worker %d: %w", i, err)
		}
	}
	close(stopSampling)
	memPeak := <-peak
	var recs []record
	for i := range procs {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprint(i)))
		if err != nil {
			return err
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if line == "" {
				continue
			}
			var r record
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				return err
			}
			recs = append(recs, r)
		}
	}
	st, err := sem.Stats(ctx)
	if err != nil {
		return err
	}
	_ = sem.Close()
	rep := analyzeRun(recs, sc, start, start+int64(c.duration))
	rep.Scenario, rep.Label, rep.FIFO = c.scenario, c.label, c.fifo
	rep.RedisMemBefore, rep.RedisMemPeak = memBefore, memPeak
	rep.Heaps = heaps
	rep.StatsAfter = fmt.Sprintf("%+v", st)
	rep.print(os.Stdout)
	if c.results != "" {
		f, err := os.OpenFile(c.results, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		return json.NewEncoder(f).Encode(rep)
	}
	return nil
}

func usedMemory(ctx context.Context, rdb *redis.Client) int64 {
	info, err := rdb.InfoMap(ctx, "memory").Result()
	if err != nil {
		return -1
	}
	var n int64
	fmt.Sscan(info["Memory"]["used_memory"], &n)
	return n
}
