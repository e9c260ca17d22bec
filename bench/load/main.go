// Command load is the multi-process load driver of the benchmarks.
//
//	cd bench && go run ./load -backend distsem|leased|seedsem|redsync|redislock|local|xsync|list -redis 127.0.0.1:7460 \
//	    -limit 4 -procs 4 -workers 32 -hold 2ms -duration 5s
//
// The parent starts -procs worker processes (re-executions of this binary)
// and splits -workers goroutines among them. All of them start at one
// instant chosen by the parent, then loop acquire → hold → release until
// -duration has passed, and record every grant with wall-clock nanoseconds
// (one machine, one clock): worker, acquire start, grant, release start,
// release done, and the server time of the grant when the backend reports
// it. The parent merges the timelines and prints the figures of
// bench/analyze over the steady window [start+warmup, start+duration−cooldown).
//
// Backends: distsem (redissem.New), leased (redissem.NewLeased), seedsem
// (bench/seedsem, the ZSET + BRPOP design), ref (bench/refsem), the peers
// redsync (go-redsync/redsync) and redislock (bsm/redislock), which are
// mutexes and need -limit 1, local (core.NewLocal) and xsync
// (golang.org/x/sync/semaphore), which are per process and need -procs 1. See backends.go for each peer's settings.
//
// With -sems N each acquire picks one of N semaphores at random (distsem
// uses redissem.NewKeyed); -cluster a,b,c runs on a Redis Cluster;
// -replica-ack n makes distsem wait for n replicas (redissem.WithReplicaAck).
//
//	go run ./load idlemem -backend distsem -redis ADDR -n 1000
//
// prints the Redis memory that one idle semaphore keeps (see idlemem.go).
//
//	go run ./load summarize [-base VARIANT] results.jsonl
//
// prints the median and range of every figure per -label, from the JSON
// lines that runs with -results appended, and the throughput of each
// label "<workload>-<variant>" over that of "<workload>-VARIANT" (default
// seedsem), paired by repetition.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/distsem/distsem/bench/analyze"
)

type config struct {
	cpuProfile string
	backend    string
	addr       string
	name       string
	limit      int64
	procs      int
	workers    int
	hold       time.Duration
	duration   time.Duration
	warmup     time.Duration
	cooldown   time.Duration
	lease      time.Duration
	fifoTol    time.Duration
	label      string
	results    string
	rep        int
	keep       bool
	pool       int
	redisPID   int
	sems       int
	flows      int // -flows: distsem names one of this many flows per acquire
	cluster    string
	ack        int           // -replica-ack: redissem.WithReplicaAck's n, 0 off
	ackWait    time.Duration // -replica-ack-timeout

	// Child mode.
	childIndex int
	childGors  int
	childOut   string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "idlemem" {
		if err := idlemem(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "summarize" {
		files, base := os.Args[2:], "seedsem"
		if len(files) >= 2 && files[0] == "-base" {
			files, base = files[2:], files[1]
		}
		if err := summarize(os.Stdout, files, base); err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		return
	}
	var c config
	flag.StringVar(&c.backend, "backend", "distsem", strings.Join(backendNames, " | "))
	flag.StringVar(&c.addr, "redis", "127.0.0.1:7460", "redis-server address (loopback only)")
	flag.StringVar(&c.name, "name", "", "semaphore name (default: unique per run)")
	flag.Int64Var(&c.limit, "limit", 4, "permits")
	flag.IntVar(&c.procs, "procs", 4, "worker processes")
	flag.IntVar(&c.workers, "workers", 32, "goroutines in all, split among the processes")
	flag.DurationVar(&c.hold, "hold", 2*time.Millisecond, "hold time per grant (0: release at once)")
	flag.DurationVar(&c.duration, "duration", 5*time.Second, "length of the run")
	flag.DurationVar(&c.warmup, "warmup", -1, "excluded from the start of the window (default duration/10)")
	flag.DurationVar(&c.cooldown, "cooldown", -1, "excluded from the end of the window (default duration/10)")
	flag.DurationVar(&c.lease, "lease", 10*time.Second, "distsem lease TTL")
	flag.DurationVar(&c.fifoTol, "fifo-tol", time.Millisecond, "tolerance of the FIFO check")
	flag.StringVar(&c.label, "label", "", "label of this run in -results")
	flag.StringVar(&c.results, "results", "", "append a JSON line with the figures to this file")
	flag.IntVar(&c.rep, "rep", 0, "repetition number, recorded in -results")
	flag.BoolVar(&c.keep, "keep", false, "keep the timeline files")
	flag.IntVar(&c.pool, "pool", 0, "go-redis pool size per process (default: distsem 20, seedsem goroutines+8)")
	flag.IntVar(&c.redisPID, "redis-pid", 0, "PID of redis-server, to report its CPU use (optional)")
	flag.IntVar(&c.sems, "sems", 1, "distinct semaphores; each acquire picks one at random")
	flag.IntVar(&c.flows, "flows", 0, "distsem: each acquire names one of this many flows (core.WithFlow), in turn; 0: none")
	flag.StringVar(&c.cluster, "cluster", "", "comma-separated Redis Cluster addresses (loopback only) instead of -redis")
	flag.IntVar(&c.ack, "replica-ack", 0, "distsem: redissem.WithReplicaAck(n, -replica-ack-timeout) with this n (0: off)")
	flag.DurationVar(&c.ackWait, "replica-ack-timeout", 500*time.Millisecond, "distsem: the timeout of -replica-ack")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "write each worker process's CPU profile over the run to DIR/cpuN.prof")
	flag.IntVar(&c.childIndex, "child-index", -1, "internal: run as worker process i")
	flag.IntVar(&c.childGors, "child-gors", 0, "internal: goroutines of this worker process")
	flag.StringVar(&c.childOut, "child-out", "", "internal: timeline file of this worker process")
	flag.Parse()

	var err error
	if c.childIndex >= 0 {
		err = child(c)
	} else {
		err = parent(c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func (c *config) check() error {
	if c.limit <= 0 || c.procs <= 0 || c.workers < c.procs || c.duration <= 0 || c.hold < 0 || c.sems < 1 {
		return fmt.Errorf("bad sizes: limit %d procs %d workers %d duration %v hold %v sems %d", c.limit, c.procs, c.workers, c.duration, c.hold, c.sems)
	}
	switch {
	case !slices.Contains(backendNames, c.backend):
		return fmt.Errorf("unknown -backend %q", c.backend)
	case inProcess(c.backend):
		if c.procs != 1 {
			return fmt.Errorf("-backend %s is per process: use -procs 1", c.backend)
		}
	default:
		for _, a := range append(strings.Split(c.cluster, ","), c.addr) {
			if a != "" && !strings.HasPrefix(a, "127.0.0.1:") && !strings.HasPrefix(a, "localhost:") {
				return fmt.Errorf("%q: loopback addresses only", a)
			}
		}
		if mutexOnly(c.backend) && c.limit != 1 {
			return fmt.Errorf("-backend %s is a mutex: use -limit 1", c.backend)
		}
	}
	if c.warmup < 0 {
		c.warmup = c.duration / 10
	}
	if c.cooldown < 0 {
		c.cooldown = c.duration / 10
	}
	if c.warmup+c.cooldown >= c.duration {
		return fmt.Errorf("warmup %v + cooldown %v leave no window in %v", c.warmup, c.cooldown, c.duration)
	}
	return nil
}

func parent(c config) error {
	if err := c.check(); err != nil {
		return err
	}
	if c.name == "" {
		c.name = fmt.Sprintf("bench-%s-%d", c.backend, time.Now().UnixNano())
	}
	dir, err := os.MkdirTemp("", "distsem-load-")
	if err != nil {
		return err
	}
	if !c.keep {
		defer os.RemoveAll(dir)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}

	type proc struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		lines *bufio.Scanner
		out   string
	}
	procs := make([]*proc, c.procs)
	var workers []analyze.Worker
	killAll := func() {
		for _, p := range procs {
			if p != nil && p.cmd.Process != nil && p.cmd.ProcessState == nil {
				_ = p.cmd.Process.Kill() // our own child, by PID
			}
		}
	}
	defer killAll()
	for i := range procs {
		gors := c.workers / c.procs
		if i < c.workers%c.procs {
			gors++
		}
		for g := range gors {
			workers = append(workers, analyze.Worker{Proc: int32(i), Gor: int32(g)})
		}
		out := filepath.Join(dir, fmt.Sprintf("w%d.ev", i))
		args := append(childFlags(c), "-child-index", strconv.Itoa(i), "-child-gors", strconv.Itoa(gors), "-child-out", out)
		cmd := exec.Command(exe, args...)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		procs[i] = &proc{cmd: cmd, stdin: stdin, lines: bufio.NewScanner(stdout), out: out}
	}
	// Every child connects, then says "ready".
	for i, p := range procs {
		if !p.lines.Scan() || p.lines.Text() != "ready" {
			return fmt.Errorf("worker %d did not get ready: %q %v", i, p.lines.Text(), p.lines.Err())
		}
	}
	start := time.Now().Add(100 * time.Millisecond).UnixNano()
	for _, p := range procs {
		if _, err := fmt.Fprintf(p.stdin, "%d\n", start); err != nil {
			return err
		}
		p.stdin.Close()
	}
	time.Sleep(time.Until(time.Unix(0, start)))
	cpu0 := sampleCPU(c.redisPID)
	cmd0 := sampleCommands(c)
	var errCount int64
	var events []analyze.Event
	var workerCPU time.Duration
	var cpu1 cpuSample
	var cmd1 cmdSample
	var wall time.Duration
	for i, p := range procs {
		if p.lines.Scan() {
			if n, err := strconv.ParseInt(strings.TrimPrefix(p.lines.Text(), "errors "), 10, 64); err == nil {
				errCount += n
			}
		}
		if err := p.cmd.Wait(); err != nil {
			return fmt.Errorf("worker %d: %w", i, err)
		}
		if i == len(procs)-1 {
			cpu1 = sampleCPU(c.redisPID)
			cmd1 = sampleCommands(c)
			wall = time.Since(time.Unix(0, start))
		}
		f, err := os.Open(p.out)
		if err != nil {
			return err
		}
		events, err = analyze.ReadEvents(f, events)
		f.Close()
		if err != nil {
			return fmt.Errorf("worker %d: %w", i, err)
		}
	}
	for _, p := range procs {
		workerCPU += p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
	}
	// The workers' rusage includes their start-up before the start
	// instant; it is small (connecting) next to a run of seconds.
	cores := func(jiffies int64) float64 { return float64(jiffies) / clkTck / wall.Seconds() }
	cpuMachine := cores(cpu1.machine - cpu0.machine)
	cpuWorkers := workerCPU.Seconds() / wall.Seconds()
	cpuRedis := cores(cpu1.redis - cpu0.redis)
	cpuOther := max(0, cpuMachine-cpuWorkers-cpuRedis)
	if !inProcess(c.backend) {
		cleanup(c)
	}
	served := map[[2]int32]bool{}
	for _, e := range events {
		served[[2]int32{e.Proc, e.Gor}] = true
	}
	starved := len(workers) - len(served)
	pending := unfinished(events, workers, start, start+int64(c.duration))
	// Every grant after the start counts: the commands were counted from
	// the start to the last worker's exit.
	grants := 0
	for _, e := range events {
		if e.Grant >= start {
			grants++
		}
	}
	cmdsPerAcq, scriptsPerAcq, usecPerEval := commandCost(cmd0, cmd1, grants)
	var redisUsPerAcq float64
	if c.redisPID > 0 && grants > 0 {
		redisUsPerAcq = float64(cpu1.redis-cpu0.redis) / clkTck * 1e6 / float64(grants)
	}

	// With -sems N the holders of N semaphores overlap: the limit checked
	// on the merged timeline is then N × limit.
	rep, err := analyze.Analyze(analyze.Input{
		Events: events, Workers: workers, Limit: c.limit * int64(c.sems),
		From: start + int64(c.warmup), To: start + int64(c.duration-c.cooldown),
		FIFOTolerance: c.fifoTol,
	})
	if err != nil {
		return err
	}
	fmt.Printf("== %s backend=%s procs=%d workers=%d limit=%d hold=%v duration=%v sems=%d cluster=%v rep=%d\n",
		c.label, c.backend, c.procs, c.workers, c.limit, c.hold, c.duration, c.sems, c.cluster != "", c.rep)
	if starved > 0 {
		fmt.Printf("%d of %d goroutines got no grant in the whole run\n", starved, len(workers))
	}
	if errCount > 0 {
		fmt.Printf("!!!!! %d acquire/release errors (see stderr) !!!!!\n", errCount)
	}
	fmt.Printf("longest Acquire still waiting at the end: %v\n", pending.Round(time.Microsecond))
	rep.Print(os.Stdout)
	fmt.Printf("cpu (cores busy): machine %.2f = workers %.2f + redis %.2f + other %.2f\n", cpuMachine, cpuWorkers, cpuRedis, cpuOther)
	if cmdsPerAcq > 0 {
		fmt.Printf("redis: %.1f commands and %.2f scripts per acquisition (INFO commandstats, all commands), %.2f µs per EVALSHA, %.1f µs of redis-server CPU per acquisition\n",
			cmdsPerAcq, scriptsPerAcq, usecPerEval, redisUsPerAcq)
	}
	if c.results != "" {
		f, err := os.OpenFile(c.results, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		b, _ := json.Marshal(result{
			Label: c.label, Backend: c.backend, Rep: c.rep, Procs: c.procs, Workers: c.workers,
			Limit: c.limit, Hold: c.hold, Duration: c.duration, Errors: errCount, Report: rep,
			Sems: c.sems, Cluster: c.cluster != "", Starved: starved, Pending: pending,
			CPUMachine: cpuMachine, CPUWorkers: cpuWorkers, CPURedis: cpuRedis, CPUOther: cpuOther,
			CmdsPerAcq: cmdsPerAcq, ScriptsPerAcq: scriptsPerAcq, UsecPerEval: usecPerEval, RedisUsPerAcq: redisUsPerAcq,
		})
		if _, err := fmt.Fprintf(f, "%s\n", b); err != nil {
			return err
		}
	}
	if rep.Violation {
		return errors.New("limit violated")
	}
	return nil
}

// unfinished returns the longest time that a worker goroutine spent in an
// Acquire that had not returned when the run ended at end: from its last
// release (or from start, if it had no grant) to end. The waits of the
// grants do not show a worker stuck until the end, nor Jain's index one
// stuck for part of the run only.
func unfinished(events []analyze.Event, workers []analyze.Worker, start, end int64) time.Duration {
	last := make(map[analyze.Worker]int64, len(workers))
	for _, w := range workers {
		last[w] = start
	}
	for _, e := range events {
		k := analyze.Worker{Proc: e.Proc, Gor: e.Gor}
		last[k] = max(last[k], e.RelDone)
	}
	var longest int64
	for _, t := range last {
		longest = max(longest, end-t)
	}
	return time.Duration(longest)
}
