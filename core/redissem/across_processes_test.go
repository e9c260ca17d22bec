package redissem_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

const childEnv = "DISTSEM_CORE_CHILD"

// startChild runs this test binary again in child mode, sharing the test's
// real redis-server, and returns it with its stdout.
func startChild(t *testing.T, mode string, env ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, childEnv+"="+mode, "DISTSEM_REDIS_ADDR="+servertest.RedisAddr(t))...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	ok(t, err)
	ok(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewScanner(out)
}

// queuedAt returns when p's request queued, in Unix ns (0 if it did not);
// p must be a permit of s, still held.
func queuedAt(s *redissem.Semaphore, p *core.Permit) int64 {
	if t := redissem.QueuedAt(s, p); !t.IsZero() {
		return t.UnixNano()
	}
	return 0
}

func runChild(mode string) int {
	if strings.HasPrefix(mode, "leased-") {
		return runLeasedChild(mode) // leased_multiproc_test.go
	}
	c := redis.NewClient(&redis.Options{Addr: os.Getenv("DISTSEM_REDIS_ADDR"), ClientName: os.Getenv("CLIENT_NAME")})
	defer c.Close()
	limit, _ := strconv.ParseInt(os.Getenv("LIMIT"), 10, 64)
	ttl, _ := time.ParseDuration(os.Getenv("TTL"))
	s := redissem.New(c, os.Getenv("NAME"), limit, redissem.WithKeyPrefix(os.Getenv("PREFIX")), redissem.WithDefaultLeaseTTL(ttl))
	defer s.Close()
	ctx := context.Background()
	switch mode {
	case "adopt", "releaseid":
		return runAdoptChild(mode, s)
	case "crash":
		// Hold every permit, queue two more waiters, then wait to be killed.
		if _, err := s.Acquire(ctx, core.WithWeight(limit)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for range 2 {
			go func() { _, _ = s.Acquire(ctx) }()
		}
		for {
			st, err := s.Stats(ctx)
			if err == nil && st.Waiting == 2 {
				break
			}
		}
		fmt.Println("ready")
		select {}
	case "queue":
		// Queue one waiter and wait to be killed.
		_, err := s.Acquire(ctx)
		fmt.Fprintln(os.Stderr, "queue child: Acquire returned", err)
		return 1
	case "timeline":
		goroutines, _ := strconv.Atoi(os.Getenv("GOROUTINES"))
		iters, _ := strconv.Atoi(os.Getenv("ITERS"))
		hold, _ := time.ParseDuration(os.Getenv("HOLD"))
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range iters {
					asked := time.Now().UnixNano()
					p, err := s.Acquire(ctx)
					if err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(1)
					}
					got := time.Now().UnixNano()
					queued := queuedAt(s, p)
					time.Sleep(hold) // the work done under the permit
					done := time.Now().UnixNano()
					if err := p.Release(ctx); err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(1)
					}
					mu.Lock()
					fmt.Println(asked, got, done, p.GrantedAt().UnixNano(), queued)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return 0
	}
	return 2
}

// TestMultiProcessTimeline runs several processes, each with many
// goroutines, on one semaphore of a real Redis, and checks the recorded
// timeline: never more than limit holders, and grants in request order
// within a tolerance.
func TestMultiProcessTimeline(t *testing.T) {
	const (
		procs, goroutines, iters = 3, 8, 12
		limit                    = 2
		hold                     = 5 * time.Millisecond
		tolerance                = time.Millisecond
	)
	prefix := uniquePrefix(t)
	var scanners []*bufio.Scanner
	var cmds []*exec.Cmd
	for range procs {
		cmd, sc := startChild(t, "timeline", "PREFIX="+prefix, "NAME=timeline", "LIMIT="+strconv.Itoa(limit),
			"TTL=10s", "GOROUTINES="+strconv.Itoa(goroutines), "ITERS="+strconv.Itoa(iters), "HOLD="+hold.String())
		cmds, scanners = append(cmds, cmd), append(scanners, sc)
	}
	// asked and got are the client's clock just before Acquire and just
	// after it returned; granted is the Redis TIME of the grant (the same
	// machine clock), which orders grants as Redis made them.
	// queued is the Redis TIME at which the request joined the queue (0 if
	// it was granted at once).
	type grant struct{ asked, got, done, granted, queued int64 }
	var grants []grant
	for i, sc := range scanners {
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			var g grant
			g.asked, _ = strconv.ParseInt(f[0], 10, 64)
			g.got, _ = strconv.ParseInt(f[1], 10, 64)
			g.done, _ = strconv.ParseInt(f[2], 10, 64)
			g.granted, _ = strconv.ParseInt(f[3], 10, 64)
			g.queued, _ = strconv.ParseInt(f[4], 10, 64)
			grants = append(grants, g)
		}
		if err := cmds[i].Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
	if len(grants) != procs*goroutines*iters {
		t.Fatalf("%d grants recorded, want %d", len(grants), procs*goroutines*iters)
	}
	// Holders at once, from the grant and release instants.
	var held []interval
	for _, g := range grants {
		held = append(held, interval{time.Unix(0, g.got), time.Unix(0, g.done)})
	}
	top := peak(held)
	if top > limit {
		t.Fatalf("%d holders at once, limit %d", top, limit)
	}
	// FIFO, on the server's clock: among queued requests, one that joined
	// the queue more than tolerance before another is granted before it.
	// (The client's clock before Acquire is only logged: on a loaded machine
	// a process may wait tens of ms to be scheduled before its script runs.)
	sort.Slice(grants, func(i, j int) bool { return grants[i].granted < grants[j].granted })
	inversions, worst, worstClient, queued := 0, int64(0), int64(0), 0
	for i := range grants {
		if grants[i].queued != 0 {
			queued++
		}
		for j := i + 1; j < len(grants); j++ {
			worstClient = max(worstClient, grants[i].asked-grants[j].asked)
			if grants[i].queued == 0 || grants[j].queued == 0 {
				continue
			}
			if d := grants[i].queued - grants[j].queued; d > 0 {
				worst = max(worst, d)
				if d > tolerance.Nanoseconds() {
					inversions++
				}
			}
		}
	}
	t.Logf("%d grants (%d queued), peak holders %d, worst inversion %v by queue time, %v by client time before Acquire",
		len(grants), queued, top, time.Duration(worst), time.Duration(worstClient))
	if queued < len(grants)/2 {
		t.Fatalf("only %d of %d grants queued: the workload does not test FIFO", queued, len(grants))
	}
	if inversions > 0 {
		t.Fatalf("%d grants out of FIFO order by more than %v (worst %v)", inversions, tolerance, time.Duration(worst))
	}
}
