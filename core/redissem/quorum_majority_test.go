package redissem_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// masters starts n independent redis-servers for one test.
func masters(t *testing.T, n int) []*servertest.RedisServer {
	procs := make([]*servertest.RedisServer, n)
	// The first in the test's goroutine: without redis-server it skips the
	// test (or fails it under CI), which only that goroutine may do.
	procs[0] = servertest.StartRedis(t)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Go(func() { procs[i] = servertest.StartRedis(t) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return procs
}

// clientsOf returns one client per master, with short timeouts so that a
// dead master fails fast.
func clientsOf(t *testing.T, procs []*servertest.RedisServer) []redis.UniversalClient {
	out := make([]redis.UniversalClient, len(procs))
	for i, p := range procs {
		c := redis.NewClient(&redis.Options{Addr: p.Addr(), PoolSize: 32, MaxRetries: -1,
			DialTimeout: time.Second, ReadTimeout: 3 * time.Second})
		t.Cleanup(func() { _ = c.Close() })
		out[i] = c
	}
	return out
}

// quorumBackends are the quorum semaphores the conformance suite runs on.
func quorumBackends() []impl {
	return []impl{
		{"quorum3", func(t *testing.T, limit int64, opts ...opt) sem {
			cs := clientsOf(t, masters(t, 3))
			return closeAtCleanup(t, redissem.NewQuorum(cs, "conf", limit, redisOpts(opts)...))
		}},
		{"allof3", func(t *testing.T, limit int64, opts ...opt) sem {
			cs := clientsOf(t, masters(t, 3))
			return closeAtCleanup(t, redissem.NewAllOf(cs, "conf", limit, redisOpts(opts)...))
		}},
	}
}

// wantMastersEmpty checks that every master that is up comes to hold
// nothing and queue no one. It waits as wantStats does (longer than the
// tests' leases): a release that a stalled master could not take before
// Close abandoned its background retry comes back with its lease, as Close
// documents; a permit or waiter leaked for good does not.
func wantMastersEmpty(t *testing.T, cs []redis.UniversalClient, up []bool, prefix, name string) {
	t.Helper()
	for i, c := range cs {
		if !up[i] {
			continue
		}
		s := redissem.New(c, name, 1, redissem.WithKeyPrefix(prefix))
		t.Logf("master %d:", i)
		wantStats(t, s, 0, 0)
		_ = s.Close()
	}
}

type interval struct{ from, to time.Time }

// TestQuorumTokensSurviveAForgetfulMaster: the token of a permit is raised
// on its majority, so a later permit granted by a different majority still
// gets a larger token, even when the master that gave the largest token is
// gone. Without the raise, the third grant below would get a token from
// masters whose counters never saw the second one's.
func TestQuorumTokensSurviveAForgetfulMaster(t *testing.T) {
	ctx := context.Background()
	prefix := uniquePrefix(t)
	ms := masters(t, 3)
	cs := clientsOf(t, ms)
	// Masters get 1 s to answer, not TTL/10: under -race on a loaded
	// machine a live master's first Acquire (subscribe, rights check,
	// script) took over 100 ms in 3 of 20 runs, and with one master down
	// a skipped live one fails the Acquire.
	q := redissem.NewQuorum(cs, "tok", 1, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(time.Second),
		redissem.WithMasterTimeout(time.Second))
	defer q.Close()

	ms[1].Kill() // the next grants come from masters 0 and 2
	a := acquire(t, q)
	ok(t, a.Release(ctx))
	// Master 0's clock is far ahead: its tokens jump.
	ahead := a.Token() + 1<<40
	ok(t, cs[0].HSet(ctx, prefix+"{tok}:m", "tok", ahead).Err())
	b := acquire(t, q)
	if b.Token() <= ahead {
		t.Fatalf("token %d: not the largest of the masters' (%d)", b.Token(), ahead)
	}
	ok(t, b.Release(ctx))
	ms[0].Kill()    // the master that gave b's token is gone
	ms[1].Restart() // and the other one is back, empty
	c := acquire(t, q)
	if c.Token() <= b.Token() {
		t.Fatalf("token %d after %d: tokens went back", c.Token(), b.Token())
	}
	ok(t, c.Release(ctx))
}

// TestQuorumLostWithoutMajority: a permit whose masters' leases end on all
// but a minority is lost.
func TestQuorumLostWithoutMajority(t *testing.T) {
	ms := masters(t, 3)
	// The default master timeout, a tenth of the lease (30ms), is shorter
	// than a fresh master's first Acquire on a loaded machine (subscribe,
	// rights check, script): a skipped master would fail the Acquire.
	q := redissem.NewQuorum(clientsOf(t, ms), "lost", 1, redissem.WithKeyPrefix(uniquePrefix(t)),
		redissem.WithDefaultLeaseTTL(300*time.Millisecond), redissem.WithMasterTimeout(200*time.Millisecond))
	defer q.Close()
	p := acquire(t, q)
	select {
	case <-p.Lost():
		t.Fatal("lost while every master is up")
	default:
	}
	ms[0].Kill()
	ms[1].Kill()
	select {
	case <-p.Lost():
	case <-time.After(time.Minute):
		t.Fatal("a permit with one master of three left was not lost")
	}
	_ = p.Release(context.Background())
}

// TestAllOfNeedsEveryMaster: NewAllOf grants only when every master does;
// with one down, Acquire fails with ErrUnavailable and leaves nothing on
// the others.
func TestAllOfNeedsEveryMaster(t *testing.T) {
	ctx := context.Background()
	prefix := uniquePrefix(t)
	ms := masters(t, 3)
	cs := clientsOf(t, ms)
	q := redissem.NewAllOf(cs, "all", 1, redissem.WithKeyPrefix(prefix))
	defer q.Close()
	p := acquire(t, q)
	if _, err := q.TryAcquire(ctx); !errors.Is(err, core.ErrNoPermit) {
		t.Fatalf("second TryAcquire: %v, want ErrNoPermit", err)
	}
	ok(t, p.Release(ctx))
	ms[2].Kill()
	if _, err := q.Acquire(ctx); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("Acquire with a master down: %v, want ErrUnavailable", err)
	}
	wantMastersEmpty(t, cs, []bool{true, true, false}, prefix, "all")
	// A quorum of the same masters still grants.
	qq := redissem.NewQuorum(cs, "all", 1, redissem.WithKeyPrefix(prefix))
	defer qq.Close()
	p = acquire(t, qq)
	ok(t, p.Release(ctx))
}

// TestQuorumSizeKeepsTheLimit: with a limit above 1 a majority is not
// enough. Two holders, each granted by a majority of 3 masters at limit 2
// ({0,1} and {1,2}), leave one permit free on masters 0 and 2: a majority
// quorum would admit a third holder. The quorum for limit 2 on 3 masters is
// all 3, so it refuses.
func TestQuorumSizeKeepsTheLimit(t *testing.T) {
	ctx := context.Background()
	prefix := uniquePrefix(t)
	cs := clientsOf(t, masters(t, 3))
	node := func(i int) *redissem.Semaphore {
		s := redissem.New(cs[i], "size", 2, redissem.WithKeyPrefix(prefix))
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	n0, n1, n2 := node(0), node(1), node(2)
	for _, s := range []*redissem.Semaphore{n0, n1, n1, n2} { // holder 1 on {0,1}, holder 2 on {1,2}
		tryAcquire(t, s)
	}
	q := redissem.NewQuorum(cs, "size", 2, redissem.WithKeyPrefix(prefix))
	defer q.Close()
	if p, err := q.TryAcquire(ctx); !errors.Is(err, core.ErrNoPermit) {
		t.Fatalf("a third holder at limit 2: %v, %v", p, err)
	}
	wantStats(t, n0, 1, 0)
	wantStats(t, n2, 1, 0)
}

// TestQuorumRollsBackPartialGrants: an Acquire that got the first master
// but waits for the second (held by someone else) gives the first back
// when its ctx ends, and leaves nothing queued anywhere.
func TestQuorumRollsBackPartialGrants(t *testing.T) {
	prefix := uniquePrefix(t)
	cs := clientsOf(t, masters(t, 3))
	// The quorum asks the masters in the order of their addresses.
	byAddr := slices.Clone(cs)
	slices.SortFunc(byAddr, func(a, b redis.UniversalClient) int {
		return strings.Compare(a.(*redis.Client).Options().Addr, b.(*redis.Client).Options().Addr)
	})
	other := redissem.New(byAddr[1], "partial", 1, redissem.WithKeyPrefix(prefix))
	defer other.Close()
	held := tryAcquire(t, other) // the second master is taken
	m0 := redissem.New(byAddr[0], "partial", 1, redissem.WithKeyPrefix(prefix))
	defer m0.Close()
	q := redissem.NewQuorum(cs, "partial", 1, redissem.WithKeyPrefix(prefix), redissem.WithMasterTimeout(time.Minute))
	defer q.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := q.Acquire(ctx); errc <- err }()
	waitQueued(t, other, 1) // granted on the first master, queued on the second
	wantStats(t, m0, 1, 0)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire: %v, want context.Canceled", err)
	}
	wantStats(t, m0, 0, 0)
	wantStats(t, other, 1, 0)
	ok(t, held.Release(context.Background()))
	wantMastersEmpty(t, cs, []bool{true, true, true}, prefix, "partial")
}

// TestQuorumSkipsAStalledMaster: with the first or second master (in the
// order the quorum asks them) paused by SIGSTOP, a request to it gets no
// answer; Acquire skips it after WithMasterTimeout and is granted by the
// other two while it is still paused.
func TestQuorumSkipsAStalledMaster(t *testing.T) {
	for _, pos := range []int{0, 1} {
		t.Run(fmt.Sprintf("position-%d", pos), func(t *testing.T) {
			t.Parallel()
			prefix := uniquePrefix(t)
			ms := masters(t, 3)
			// No read timeout: only WithMasterTimeout can give up on the
			// stalled master before ctx ends.
			var cs []redis.UniversalClient
			for _, m := range ms {
				c := redis.NewClient(&redis.Options{Addr: m.Addr(), ReadTimeout: -1, MaxRetries: -1})
				t.Cleanup(func() { _ = c.Close() })
				cs = append(cs, c)
			}
			order := slices.Clone(ms) // the quorum asks the masters in the order of their addresses
			slices.SortFunc(order, func(a, b *servertest.RedisServer) int { return strings.Compare(a.Addr(), b.Addr()) })
			stalled := order[pos]
			q := redissem.NewQuorum(cs, "stalled", 1, redissem.WithKeyPrefix(prefix), redissem.WithMasterTimeout(100*time.Millisecond))
			stalled.Pause()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			p, err := q.Acquire(ctx)
			if err != nil {
				stalled.Resume()
				_ = q.Close()
				t.Fatalf("Acquire with a master stalled: %v", err)
			}
			ok(t, p.Release(ctx))
			stalled.Resume()
			ok(t, q.Close()) // waits for the request to the stalled master to end
			wantMastersEmpty(t, cs, []bool{true, true, true}, prefix, "stalled")
		})
	}
}
