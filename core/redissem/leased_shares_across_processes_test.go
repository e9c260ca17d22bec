package redissem_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/internal/testwait"
)

// runLeasedChild is a child process of the leased-shares tests.
func runLeasedChild(mode string) int {
	c := redis.NewClient(&redis.Options{Addr: os.Getenv("DISTSEM_REDIS_ADDR")})
	defer c.Close()
	limit, _ := strconv.ParseInt(os.Getenv("LIMIT"), 10, 64)
	ttl, _ := time.ParseDuration(os.Getenv("TTL"))
	s := redissem.NewLeased(c, os.Getenv("NAME"), limit, redissem.WithKeyPrefix(os.Getenv("PREFIX")),
		redissem.WithDefaultLeaseTTL(ttl))
	defer s.Close()
	ctx := context.Background()
	switch mode {
	case "leased-hold":
		// Hold the whole limit, then wait to be killed.
		if _, err := s.Acquire(ctx, core.WithWeight(limit)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("ready")
		select {}
	case "leased-loop":
		// Acquire, hold, release in GOROUTINES loops until stdin closes;
		// print "asked got done" (ns) per grant.
		goroutines, _ := strconv.Atoi(os.Getenv("GOROUTINES"))
		hold, _ := time.ParseDuration(os.Getenv("HOLD"))
		var stop atomic.Bool
		go func() { _, _ = io.Copy(io.Discard, os.Stdin); stop.Store(true) }()
		var mu sync.Mutex
		out := bufio.NewWriter(os.Stdout)
		var wg sync.WaitGroup
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					asked := time.Now().UnixNano()
					p, err := s.Acquire(ctx)
					if err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(1)
					}
					got := time.Now().UnixNano()
					time.Sleep(hold) // the work done under the permit
					done := time.Now().UnixNano()
					if err := p.Release(ctx); err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(1)
					}
					mu.Lock()
					fmt.Fprintln(out, asked, got, done)
					_ = out.Flush()
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return 0
	}
	return 2
}

// startLeasedChild runs a child of the leased tests; closing its stdin
// stops a "leased-loop" child.
func startLeasedChild(t *testing.T, mode string, env ...string) (*exec.Cmd, io.WriteCloser, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, childEnv+"="+mode, "DISTSEM_REDIS_ADDR="+servertest.RedisAddr(t))...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	ok(t, err)
	out, err := cmd.StdoutPipe()
	ok(t, err)
	ok(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, in, bufio.NewScanner(out)
}

// TestLeasedMultiProcess runs processes that each loop on a semaphore in
// the leased mode, one of them starting late, and checks the recorded
// timeline: never more holders fleet-wide than the limit; the late process
// gets a share (the delay is logged, not asserted); over the window in
// which all run, equal demand gets grant counts with Jain's index >= 0.95
// (3 processes, limit 4: the unit left over by integer shares rotates
// every 200ms, and the window, about 2.7s, spans more than ten turns of
// it); nothing leaks.
func TestLeasedMultiProcess(t *testing.T) {
	const (
		procs, goroutines = 3, 4
		limit             = 4
		hold              = 2 * time.Millisecond
		lateGrants        = 1500 // the late process's grants before stopping
	)
	prefix := uniquePrefix(t)
	env := []string{"PREFIX=" + prefix, "NAME=fleet", "LIMIT=" + strconv.Itoa(limit), "TTL=3s",
		"GOROUTINES=" + strconv.Itoa(goroutines), "HOLD=" + hold.String()}
	type grant struct{ asked, got, done int64 }
	grants := make([][]grant, procs)
	var cmds []*exec.Cmd
	var ins []io.WriteCloser
	var wg sync.WaitGroup
	lateDone := make(chan struct{})
	started := make(chan struct{}, procs)
	for i := range procs {
		if i == procs-1 {
			for range procs - 1 {
				<-started // the others hold the whole limit by now
			}
		}
		cmd, in, sc := startLeasedChild(t, "leased-loop", env...)
		cmds, ins = append(cmds, cmd), append(ins, in)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				var g grant
				g.asked, _ = strconv.ParseInt(f[0], 10, 64)
				g.got, _ = strconv.ParseInt(f[1], 10, 64)
				g.done, _ = strconv.ParseInt(f[2], 10, 64)
				grants[i] = append(grants[i], g)
				switch len(grants[i]) {
				case 50:
					started <- struct{}{}
				case lateGrants:
					if i == procs-1 {
						close(lateDone)
					}
				}
			}
		}()
	}
	<-lateDone
	stopChildren(t, ins, &wg, cmds)

	// Fleet-wide holders, from the grant and release instants.
	var held []interval
	for _, gs := range grants {
		for _, g := range gs {
			held = append(held, interval{time.Unix(0, g.got), time.Unix(0, g.done)})
		}
	}
	top := peak(held)
	if top > limit {
		t.Fatalf("%d holders at once fleet-wide, limit %d", top, limit)
	}

	// The window in which every process ran: from the late one's first
	// grant to the earliest last release.
	late := grants[procs-1]
	from, to := late[0].got, int64(1<<63-1)
	firstAsk := late[0].asked
	for _, g := range late {
		firstAsk, from = min(firstAsk, g.asked), min(from, g.got)
	}
	for _, gs := range grants {
		to = min(to, gs[len(gs)-1].done)
	}
	counts := make([]float64, procs)
	var sum, sumSq float64
	for i, gs := range grants {
		for _, g := range gs {
			if g.got >= from && g.done <= to {
				counts[i]++
			}
		}
		sum += counts[i]
		sumSq += counts[i] * counts[i]
	}
	jain := sum * sum / (float64(procs) * sumSq)
	t.Logf("%d grants, peak holders %d (limit %d); late process's first grant %v after its first Acquire; window %v: counts %v, Jain %.3f",
		len(held), top, limit, time.Duration(from-firstAsk), time.Duration(to-from), counts, jain)
	if jain < 0.95 {
		t.Fatalf("Jain's index %.3f over counts %v, want >= 0.95", jain, counts)
	}

	// Nothing leaked: every child left, and the fleet holds nothing.
	s := redissem.NewLeased(realClient(t), "fleet", limit, redissem.WithKeyPrefix(prefix))
	defer s.Close()
	wantStats(t, s, 0, 0)
}

// startLeasedHolder starts a child process that holds the whole limit (2)
// of leased semaphore name, with lease ttl, under a prefix of its own, and
// returns once it holds it.
func startLeasedHolder(t *testing.T, name string, ttl time.Duration) (prefix string, cmd *exec.Cmd) {
	t.Helper()
	prefix = uniquePrefix(t)
	cmd, _, sc := startLeasedChild(t, "leased-hold", "PREFIX="+prefix, "NAME="+name, "LIMIT=2", "TTL="+ttl.String())
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("child did not get ready: %q", sc.Text())
	}
	return prefix, cmd
}

// TestLeasedCrashReturnsShare kills a process that holds the whole limit in
// the leased mode: its share must come back within its lease TTL + 1s.
func TestLeasedCrashReturnsShare(t *testing.T) {
	const ttl = time.Second
	prefix, cmd := startLeasedHolder(t, "crash", ttl)
	s := redissem.NewLeased(realClient(t), "crash", 2, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(ttl))
	defer s.Close()
	ctx := context.Background()
	if _, err := s.TryAcquire(ctx); err == nil {
		t.Fatal("granted a permit while another process held the whole limit")
	}
	killed := time.Now()
	ok(t, cmd.Process.Kill())
	ctx, cancel := context.WithTimeout(ctx, ttl+time.Second)
	defer cancel()
	p, err := s.Acquire(ctx, core.WithWeight(2))
	if err != nil {
		t.Fatalf("share not back within lease TTL + 1s of the kill: %v", err)
	}
	t.Logf("share back %v after SIGKILL (lease TTL %v)", time.Since(killed), ttl)
	ok(t, p.Release(context.Background()))
	wantStats(t, s, 0, 0)
}

// TestLeasedCrashReturnsShareToQueuedWaiter kills a process that holds the
// whole limit (lease TTL 1s) while another process, whose own lease is
// 30s, is queued for it: the waiter beats only every 10s while it waits,
// yet must get the share within the holder's lease TTL + 1s of the kill
// (it beats again when the holder's lease ends).
func TestLeasedCrashReturnsShareToQueuedWaiter(t *testing.T) {
	const ttl = time.Second
	prefix, cmd := startLeasedHolder(t, "crashq", ttl)
	s := redissem.NewLeased(realClient(t), "crashq", 2, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(30*time.Second))
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		p, err := s.Acquire(ctx, core.WithWeight(2))
		if err == nil {
			err = p.Release(context.Background())
		}
		got <- err
	}()
	testwait.Until(t, time.Minute, "the waiter not queued", func() bool {
		st, err := s.Stats(ctx)
		return err == nil && st.Waiting == 1
	})
	killed := time.Now()
	ok(t, cmd.Process.Kill())
	select {
	case err := <-got:
		ok(t, err)
	case <-time.After(ttl + time.Second):
		t.Fatalf("share not back within the holder's lease TTL + 1s of the kill")
	}
	t.Logf("share back %v after SIGKILL (holder's lease TTL %v), to a waiter queued before", time.Since(killed), ttl)
}

// stopChildren closes the children's stdin (their signal to finish),
// waits for the goroutines that read them, then for each child to exit,
// failing t on a child's failure.
func stopChildren(t *testing.T, ins []io.WriteCloser, wg *sync.WaitGroup, cmds []*exec.Cmd) {
	t.Helper()
	for _, in := range ins {
		ok(t, in.Close())
	}
	wg.Wait()
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
}
