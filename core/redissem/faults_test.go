package redissem_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/faultproxy"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// Regression tests for issue 7 (core under faults). Each injects its fault
// with a faultproxy.Proxy between the client and a real redis-server, or with
// miniredis; none synchronises with a sleep. Bounds on "returns by its
// deadline" have 250ms or more of slack; figures go to the report.

const slack = 250 * time.Millisecond

// newFaultProxy starts a fault proxy in front of target, closed when t
// ends. It tags Redis pub/sub connections (faultproxy.Tagged).
func newFaultProxy(t *testing.T, target string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(target)
	ok(t, err)
	t.Cleanup(func() { _ = p.Close() })
	p.SetTag("\r\nsubscribe\r\n")
	return p
}

// proxyClient returns a client of p with o's other options (nil: the
// defaults), closed when t ends.
func proxyClient(t *testing.T, p *faultproxy.Proxy, o *redis.Options) *redis.Client {
	if o == nil {
		o = &redis.Options{}
	}
	o.Addr = p.Addr()
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// queueObserver returns an observer that sends on queued each time a
// caller of its semaphore is queued (EventWait): the caller has its reply.
// One send fits in the channel; a second one blocks until the first is
// received.
func queueObserver() (obs core.Observer, queued <-chan struct{}) {
	ch := make(chan struct{}, 1)
	return core.ObserverFunc(func(e core.Event) {
		if e.Kind == core.EventWait {
			ch <- struct{}{}
		}
	}), ch
}

// within fails the test unless f returns within d, or returns an error.
func within(t *testing.T, d time.Duration, what string, f func() error) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(d):
		t.Fatalf("%s: not done after %v", what, d)
	}
	took := time.Since(start)
	t.Logf("%s: %v", what, took)
	return took
}

// Defect 1: go-redis re-sends a script after a read timeout and Redis runs
// every copy; the copies must not count the holder twice. The proxy
// delivers the acquire twice.
func TestFaultRetriedAcquireKeepsCapacity(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	prefix := uniquePrefix(t)
	s := redissem.New(proxyClient(t, p, nil), "retry", 2, redissem.WithKeyPrefix(prefix))
	defer s.Close()
	other := redissem.New(realClient(t), "retry", 2, redissem.WithKeyPrefix(prefix))
	defer other.Close()
	ctx := context.Background()
	ok(t, tryAcquire(t, s).Release(ctx)) // the script is loaded: EVALSHA runs it
	p.SetDuplicate(true)
	pm := tryAcquire(t, s)
	p.SetDuplicate(false)
	ok(t, pm.Release(ctx))
	// Both permits must be grantable again, at once.
	a, err := other.TryAcquire(ctx)
	ok(t, err)
	b, err := other.TryAcquire(ctx)
	ok(t, err)
	ok(t, a.Release(ctx))
	ok(t, b.Release(ctx))
}

// Defect 2: a queued Acquire returns by its deadline when Redis goes
// silent, and a cancelled one at once; the clean-up runs in the background.
func TestFaultDeadlineUnderBlackhole(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	prefix := uniquePrefix(t)
	holder := redissem.New(realClient(t), "bh", 1, redissem.WithKeyPrefix(prefix))
	defer holder.Close()
	// Close waits for the round trips still stuck in the blackhole, which
	// end by the client's read and write timeouts: 1s each here.
	c := proxyClient(t, p, &redis.Options{ReadTimeout: time.Second, WriteTimeout: time.Second})
	s := redissem.New(c, "bh", 1, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(30*time.Second))
	ctx := context.Background()
	hp := acquire(t, holder)
	for _, cancelled := range []bool{false, true} {
		actx, cancel := context.WithTimeout(ctx, time.Hour)
		if !cancelled {
			cancel()
			actx, cancel = context.WithTimeout(ctx, 3*time.Second)
		}
		errc := make(chan error, 1)
		go func() { _, err := s.Acquire(actx); errc <- err }()
		waitQueued(t, holder, 1)
		ok(t, p.SetMode(faultproxy.Blackhole))
		start := time.Now()
		if cancelled {
			cancel()
		}
		within(t, 3*time.Second+slack, "queued Acquire under a blackhole", func() error {
			if err := <-errc; err == nil {
				return errors.New("granted under a blackhole")
			}
			return nil
		})
		if d, ok := actx.Deadline(); ok && !cancelled && time.Since(d) > slack {
			t.Fatalf("returned %v after its deadline", time.Since(d))
		}
		t.Logf("cancelled=%v: returned %v after the blackhole began", cancelled, time.Since(start))
		cancel()
		ok(t, p.SetMode(faultproxy.Pass))
		wantStats(t, holder, 1, 0)
	}
	ok(t, hp.Release(ctx))
	within(t, 2*time.Second+slack, "Close with nothing queued", func() error { _ = s.Close(); return nil })
}

// Defect 3: a new process's first Acquire (it must subscribe first)
// returns when its ctx is cancelled, whatever Redis does.
func TestFaultFirstAcquireHonoursCtx(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	s := redissem.New(proxyClient(t, p, nil), "first", 1, redissem.WithKeyPrefix(uniquePrefix(t)))
	defer s.Close()
	ok(t, p.SetMode(faultproxy.Blackhole))
	defer p.SetMode(faultproxy.Pass)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := s.Acquire(ctx); errc <- err }()
	time.AfterFunc(200*time.Millisecond, cancel) // the caller gives up
	within(t, 200*time.Millisecond+2*slack, "first Acquire cancelled under a blackhole", func() error {
		if err := <-errc; !errors.Is(err, context.Canceled) {
			return fmt.Errorf("err = %v, want context.Canceled", err)
		}
		return nil
	})
}

// Defect 4: a waiter queued before an outage gets the failure policy once
// the backend has been unreachable for the outage grace.
func TestFaultQueuedWaiterGetsPolicy(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	prefix := uniquePrefix(t)
	holder := redissem.New(realClient(t), "outage", 1, redissem.WithKeyPrefix(prefix))
	defer holder.Close()
	const ttl = time.Second
	obs, queued := queueObserver()
	s := redissem.New(proxyClient(t, p, nil), "outage", 1, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(ttl),
		redissem.WithFailurePolicy(core.FailOpen), redissem.WithOperationTimeout(200*time.Millisecond),
		redissem.WithOutageGrace(200*time.Millisecond), redissem.WithObserver(obs))
	defer s.Close()
	ctx := context.Background()
	hp := acquire(t, holder, core.WithLeaseTTL(time.Minute))
	defer hp.Release(ctx)
	res := make(chan *core.Permit, 1)
	go func() { pm, _ := s.Acquire(ctx); res <- pm }()
	<-queued // the waiter has its reply: it is queued
	ok(t, p.SetMode(faultproxy.Blackhole))
	defer p.SetMode(faultproxy.Pass)
	// Noticed by the next heartbeat (TTL/3), failed after the operation
	// timeout, then the grace.
	within(t, ttl/3+400*time.Millisecond+5*slack, "fail-open permit for a queued waiter", func() error {
		if pm := <-res; pm == nil || pm.Token() != 0 {
			return fmt.Errorf("permit %v, want a fail-open permit with token 0", pm)
		}
		return nil
	})
}

// Defect 5: the first fallback permit comes within the operation timeout,
// and once the breaker is open the policy applies without a round trip.
func TestFaultFailFastAndBreaker(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	s := redissem.New(proxyClient(t, p, nil), "fast", 1, redissem.WithKeyPrefix(uniquePrefix(t)),
		redissem.WithFailurePolicy(core.FailOpen), redissem.WithOperationTimeout(300*time.Millisecond),
		redissem.WithCircuitBreaker(2, time.Minute))
	defer s.Close()
	ctx := context.Background()
	pm, err := s.TryAcquire(ctx) // a connection exists before the fault
	ok(t, err)
	ok(t, pm.Release(ctx))
	ok(t, p.SetMode(faultproxy.Blackhole))
	defer p.SetMode(faultproxy.Pass)
	for i := range 2 {
		within(t, 300*time.Millisecond+slack, "fallback permit in a blackhole", func() error {
			if pm, err := s.TryAcquire(ctx); err != nil || pm.Token() != 0 {
				return fmt.Errorf("try %d: %v, %v; want a fail-open permit", i, pm, err)
			}
			return nil
		})
	}
	// Open: even a ctx of 50ms gets the policy, not a deadline error.
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	within(t, 50*time.Millisecond+slack, "breaker open", func() error {
		if pm, err := s.TryAcquire(dctx); err != nil || pm.Token() != 0 {
			return fmt.Errorf("breaker open: %v, %v; want a fail-open permit", pm, err)
		}
		return nil
	})
}

// Defect 7: a fail-local permit carries token 0, as documented.
func TestFaultFailLocalTokenZero(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	s := redissem.New(c, "x", 10, redissem.WithFailurePolicy(core.FailLocal(2)))
	defer s.Close()
	ctx := context.Background()
	for _, try := range []bool{true, false} {
		var pm *core.Permit
		var err error
		if try {
			pm, err = s.TryAcquire(ctx)
		} else {
			pm, err = s.Acquire(ctx)
		}
		ok(t, err)
		if pm.Token() != 0 {
			t.Fatalf("try=%v: fail-local permit has token %d, want 0", try, pm.Token())
		}
		ok(t, pm.Release(ctx))
	}
}

// Defect 2 with a client that honours ctx deadlines: a cancellation (no
// deadline) still ends the call at once, not at the operation timeout.
func TestFaultCancelWithContextTimeoutClient(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	s := redissem.New(proxyClient(t, p, &redis.Options{ContextTimeoutEnabled: true}), "ctxc", 1,
		redissem.WithKeyPrefix(uniquePrefix(t)), redissem.WithOperationTimeout(5*time.Second))
	defer s.Close()
	ctx := context.Background()
	ok(t, tryAcquire(t, s).Release(ctx))
	ok(t, p.SetMode(faultproxy.Blackhole))
	defer p.SetMode(faultproxy.Pass)
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { _, err := s.TryAcquire(cctx); errc <- err }()
	time.AfterFunc(200*time.Millisecond, cancel) // the caller gives up
	within(t, 200*time.Millisecond+2*slack, "TryAcquire cancelled under a blackhole", func() error {
		if err := <-errc; !errors.Is(err, context.Canceled) {
			return fmt.Errorf("err = %v, want context.Canceled", err)
		}
		return nil
	})
}

// Issue 9 item 5: a grant delivered by the heartbeat's catch-up (its
// notification was lost) carries the real grant time, not the heartbeat's.
// Without a failover the token is the server time of the grant in µs.
func TestFaultCatchUpGrantTime(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	prefix := uniquePrefix(t)
	obs, queued := queueObserver()
	s := redissem.New(proxyClient(t, p, nil), "catchup", 1, redissem.WithKeyPrefix(prefix),
		redissem.WithDefaultLeaseTTL(600*time.Millisecond), redissem.WithObserver(obs))
	defer s.Close()
	other := redissem.New(realClient(t), "catchup", 1, redissem.WithKeyPrefix(prefix))
	defer other.Close()
	ctx := context.Background()
	hp := acquire(t, other)
	res := make(chan *core.Permit, 1)
	go func() { pm, _ := s.Acquire(ctx); res <- pm }()
	<-queued
	p.SetHold(faultproxy.Tagged, faultproxy.Downstream, true) // the grant's message is held: a heartbeat catches up
	deliver := func() { p.SetHold(faultproxy.Tagged, faultproxy.Downstream, false) }
	defer deliver()
	ok(t, hp.Release(ctx))
	pm := <-res
	deliver()
	if pm == nil {
		t.Fatal("no permit")
	}
	defer pm.Release(ctx)
	if got, want := pm.GrantedAt().UnixMicro(), pm.Token(); got != want {
		t.Fatalf("GrantedAt %d µs, want the grant's time %d (%v off)", got, want, time.Duration(got-want)*time.Microsecond)
	}
}

// Defect 5: callers whose deadline ends their calls first (here 300ms,
// against an operation timeout of 1s) still open the breaker.
func TestFaultBreakerOpensOnCallerDeadlines(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	s := redissem.New(proxyClient(t, p, nil), "dl", 1, redissem.WithKeyPrefix(uniquePrefix(t)),
		redissem.WithFailurePolicy(core.FailOpen))
	defer s.Close()
	ctx := context.Background()
	ok(t, tryAcquire(t, s).Release(ctx))
	ok(t, p.SetMode(faultproxy.Blackhole))
	defer p.SetMode(faultproxy.Pass)
	for range 3 {
		dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, _ = s.TryAcquire(dctx) // a deadline error
		cancel()
	}
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if pm, err := s.TryAcquire(dctx); err != nil || pm.Token() != 0 {
		t.Fatalf("after three silent calls: %v, %v; want a fail-open permit at once", pm, err)
	}
}
