package core_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/coretest"
)

// Regression tests for issue 7 (core under faults). Each injects its fault
// with faultProxy between the client and a real redis-server, or with
// miniredis; none synchronises with a sleep. Bounds on "returns by its
// deadline" have 250ms or more of slack; figures go to the report.

const slack = 250 * time.Millisecond

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
	p := newFaultProxy(t, coretest.RedisAddr(t))
	prefix := uniquePrefix(t)
	s := core.NewRedis(p.client(t, nil), "retry", 2, core.WithKeyPrefix(prefix))
	defer s.Close()
	other := core.NewRedis(realClient(t), "retry", 2, core.WithKeyPrefix(prefix))
	defer other.Close()
	ctx := context.Background()
	ok(t, tryAcquire(t, s).Release(ctx)) // the script is loaded: EVALSHA runs it
	p.setDup(true)
	pm := tryAcquire(t, s)
	p.setDup(false)
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
	p := newFaultProxy(t, coretest.RedisAddr(t))
	prefix := uniquePrefix(t)
	holder := core.NewRedis(realClient(t), "bh", 1, core.WithKeyPrefix(prefix))
	defer holder.Close()
	s := core.NewRedis(p.client(t, nil), "bh", 1, core.WithKeyPrefix(prefix), core.WithDefaultLeaseTTL(30*time.Second))
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
		p.blackhole()
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
		p.heal()
		wantStats(t, holder, 1, 0)
	}
	ok(t, hp.Release(ctx))
	within(t, 2*time.Second+slack, "Close with nothing queued", func() error { _ = s.Close(); return nil })
}

// Defect 3: a new process's first Acquire (it must subscribe first)
// returns when its ctx is cancelled, whatever Redis does.
func TestFaultFirstAcquireHonoursCtx(t *testing.T) {
	p := newFaultProxy(t, coretest.RedisAddr(t))
	s := core.NewRedis(p.client(t, nil), "first", 1, core.WithKeyPrefix(uniquePrefix(t)))
	defer s.Close()
	p.blackhole()
	defer p.heal()
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
	p := newFaultProxy(t, coretest.RedisAddr(t))
	prefix := uniquePrefix(t)
	holder := core.NewRedis(realClient(t), "outage", 1, core.WithKeyPrefix(prefix))
	defer holder.Close()
	const ttl = time.Second
	queued := make(chan struct{}, 1)
	obs := core.ObserverFunc(func(e core.Event) {
		if e.Kind == core.EventWait {
			queued <- struct{}{}
		}
	})
	s := core.NewRedis(p.client(t, nil), "outage", 1, core.WithKeyPrefix(prefix), core.WithDefaultLeaseTTL(ttl),
		core.WithFailurePolicy(core.FailOpen), core.WithOperationTimeout(200*time.Millisecond),
		core.WithOutageGrace(200*time.Millisecond), core.WithObserver(obs))
	defer s.Close()
	ctx := context.Background()
	hp := acquire(t, holder, core.WithLeaseTTL(time.Minute))
	defer hp.Release(ctx)
	res := make(chan *core.Permit, 1)
	go func() { pm, _ := s.Acquire(ctx); res <- pm }()
	<-queued // the waiter has its reply: it is queued
	p.blackhole()
	defer p.heal()
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
	p := newFaultProxy(t, coretest.RedisAddr(t))
	s := core.NewRedis(p.client(t, nil), "fast", 1, core.WithKeyPrefix(uniquePrefix(t)),
		core.WithFailurePolicy(core.FailOpen), core.WithOperationTimeout(300*time.Millisecond),
		core.WithCircuitBreaker(2, time.Minute))
	defer s.Close()
	ctx := context.Background()
	pm, err := s.TryAcquire(ctx) // a connection exists before the fault
	ok(t, err)
	ok(t, pm.Release(ctx))
	p.blackhole()
	defer p.heal()
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
	s := core.NewRedis(c, "x", 10, core.WithFailurePolicy(core.FailLocal(2)))
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

// Defect 9: with a pinned limit, a holder set that expired while idle must
// not leave its permits counted for good.
func TestFaultPinnedLimitNoStrandedCount(t *testing.T) {
	c, m := miniClient(t)
	ctx := context.Background()
	s := core.NewRedis(c, "pin", 1)
	ok(t, s.SetLimit(ctx, 1))
	_ = acquire(t, s, core.WithLeaseTTL(200*time.Millisecond))
	ok(t, s.Close()) // as a crash: no release
	later := time.Now().Add(62 * time.Second)
	m.SetTime(later)
	m.FastForward(62 * time.Second)
	s2 := core.NewRedis(c, "pin", 1)
	defer s2.Close()
	wantStats(t, s2, 0, 0)
	pm, err := s2.TryAcquire(ctx)
	ok(t, err)
	ok(t, pm.Release(ctx))
}

// Defect 10: the clean-up of a timed-out TryAcquire may reach Redis before
// the acquire itself; the late acquire must then be refused.
func TestFaultLateAcquireRefused(t *testing.T) {
	p := newFaultProxy(t, coretest.RedisAddr(t))
	prefix := uniquePrefix(t)
	s := core.NewRedis(p.client(t, nil), "late", 1, core.WithKeyPrefix(prefix), core.WithDefaultLeaseTTL(30*time.Second))
	defer s.Close()
	other := core.NewRedis(realClient(t), "late", 1, core.WithKeyPrefix(prefix))
	defer other.Close()
	ctx := context.Background()
	pm := acquire(t, s) // connection and clock estimate made
	ok(t, pm.Release(ctx))
	p.setDelay(up, 300*time.Millisecond) // the acquire's bytes arrive late
	dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := s.TryAcquire(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline error", err)
	}
	p.setDelay(up, 0)
	// Whatever order the acquire and its clean-up ran in, nothing is held.
	wantStats(t, other, 0, 0)
	op, err := other.TryAcquire(ctx)
	ok(t, err)
	ok(t, op.Release(ctx))
}

// Defect 11: Close takes its queued waiters out of the Redis queue before
// it returns, so closing the client right after leaves nothing queued. The
// proxy delays every command by 1s, so a leave sent after Close returned
// would still be on its way.
func TestFaultCloseLeavesQueue(t *testing.T) {
	p := newFaultProxy(t, coretest.RedisAddr(t))
	prefix := uniquePrefix(t)
	other := core.NewRedis(realClient(t), "closeq", 1, core.WithKeyPrefix(prefix))
	defer other.Close()
	c := redis.NewClient(&redis.Options{Addr: p.addr()})
	s := core.NewRedis(c, "closeq", 1, core.WithKeyPrefix(prefix), core.WithDefaultLeaseTTL(30*time.Second),
		core.WithOperationTimeout(10*time.Second))
	ctx := context.Background()
	hp := acquire(t, other)
	errc := make(chan error, 1)
	go func() { _, err := s.Acquire(ctx); errc <- err }()
	waitQueued(t, other, 1)
	p.setDelay(up, time.Second)
	ok(t, s.Close())
	if st := stats(t, other); st.Waiting != 0 {
		t.Fatalf("right after Close: %+v, want nobody queued", st)
	}
	ok(t, c.Close())
	if err := <-errc; !errors.Is(err, core.ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
	ok(t, hp.Release(ctx))
	op, err := other.TryAcquire(ctx)
	ok(t, err)
	ok(t, op.Release(ctx))
}

// Defect 12: a release whose reply was lost after it took effect (and
// handed the permit to this process's own waiter) wakes the waiter at once,
// not at the next heartbeat (TTL/3), and reports success.
func TestFaultLostReplyResyncs(t *testing.T) {
	p := newFaultProxy(t, coretest.RedisAddr(t))
	prefix := uniquePrefix(t)
	queued := make(chan struct{}, 1)
	obs := core.ObserverFunc(func(e core.Event) {
		if e.Kind == core.EventWait {
			queued <- struct{}{}
		}
	})
	s := core.NewRedis(p.client(t, nil), "resync", 1, core.WithKeyPrefix(prefix),
		core.WithDefaultLeaseTTL(30*time.Second), core.WithObserver(obs))
	defer s.Close()
	other := core.NewRedis(realClient(t), "resync", 1, core.WithKeyPrefix(prefix))
	defer other.Close()
	ctx := context.Background()
	hp := acquire(t, s)
	res := make(chan error, 1)
	go func() {
		pm, err := s.Acquire(ctx)
		if err == nil {
			err = pm.Release(ctx)
		}
		res <- err
	}()
	<-queued // the waiter has its reply: it is queued
	p.hold(down)
	rel := make(chan error, 1)
	go func() { rel <- hp.Release(ctx) }()
	wantStats(t, other, 1, 0) // released and handed on; the reply is held
	p.reset()                 // and lost
	p.heal()
	if err := <-rel; err != nil {
		t.Errorf("Release that took effect: %v, want nil", err)
	}
	within(t, 5*time.Second, "waiter woken after a lost reply (heartbeat every 10s)", func() error { return <-res })
	wantStats(t, other, 0, 0)
}

// Defect 14: no permit after Close.
func TestFaultNoPermitAfterClose(t *testing.T) {
	c := realClient(t)
	s := core.NewRedis(c, "closed", 1, core.WithKeyPrefix(uniquePrefix(t)))
	ok(t, s.Close())
	if pm, err := s.TryAcquire(context.Background()); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("TryAcquire after Close: %v, %v; want ErrClosed", pm, err)
	}
	if pm, err := s.Acquire(context.Background()); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("Acquire after Close: %v, %v; want ErrClosed", pm, err)
	}
}

// Defect 14: a grant that races Close is never returned.
func TestFaultGrantRacingClose(t *testing.T) {
	c := realClient(t)
	prefix := uniquePrefix(t)
	other := core.NewRedis(c, "race", 1, core.WithKeyPrefix(prefix))
	defer other.Close()
	ctx := context.Background()
	for range 30 {
		s := core.NewRedis(c, "race", 1, core.WithKeyPrefix(prefix))
		hp := acquire(t, s)
		res := make(chan *core.Permit, 1)
		go func() { pm, _ := s.Acquire(ctx); res <- pm }()
		waitQueued(t, other, 1)
		go func() { _ = hp.Release(ctx) }()
		ok(t, s.Close())
		if pm := <-res; pm != nil {
			t.Fatal("Acquire returned a permit after Close")
		}
		wantStats(t, other, 0, 0)
	}
}

// Defect 13: lowering the limit fails at once every queued request heavier
// than it, not only the head.
func TestFaultLowerLimitFailsHeavyWaiters(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.new(t, 4)
		hp := acquire(t, s, core.WithWeight(4))
		light := make(chan error, 1)
		heavy := make(chan error, 1)
		go func() {
			pm, err := s.Acquire(ctx)
			if err == nil {
				err = pm.Release(ctx)
			}
			light <- err
		}()
		waitQueued(t, s, 1)
		go func() { _, err := s.Acquire(ctx, core.WithWeight(4)); heavy <- err }()
		waitQueued(t, s, 2)
		ok(t, s.SetLimit(ctx, 2))
		within(t, 5*time.Second, "heavy waiter behind the head fails", func() error {
			if err := <-heavy; !errors.Is(err, core.ErrInvalidArgument) {
				return fmt.Errorf("err = %v, want ErrInvalidArgument", err)
			}
			return nil
		})
		ok(t, hp.Release(ctx))
		ok(t, <-light)
	})
}

// Defects 2 and 11: Close with a queued waiter returns within its bound
// under a blackhole (the waiter's leave is bounded by the operation
// timeout), and the waiter returns ErrClosed.
func TestFaultCloseUnderBlackhole(t *testing.T) {
	p := newFaultProxy(t, coretest.RedisAddr(t))
	prefix := uniquePrefix(t)
	holder := core.NewRedis(realClient(t), "closebh", 1, core.WithKeyPrefix(prefix))
	defer holder.Close()
	const op = 300 * time.Millisecond
	s := core.NewRedis(p.client(t, nil), "closebh", 1, core.WithKeyPrefix(prefix),
		core.WithDefaultLeaseTTL(time.Second), core.WithOperationTimeout(op))
	ctx := context.Background()
	hp := acquire(t, holder)
	defer hp.Release(ctx)
	errc := make(chan error, 1)
	go func() { _, err := s.Acquire(ctx); errc <- err }()
	waitQueued(t, holder, 1)
	p.blackhole()
	defer p.heal()
	within(t, 2*op+2*slack, "Close under a blackhole, and its queued Acquire", func() error {
		_ = s.Close()
		if err := <-errc; !errors.Is(err, core.ErrClosed) {
			return fmt.Errorf("queued Acquire: %v, want ErrClosed", err)
		}
		return nil
	})
}

// Keys re-created on the busy path (the holder set empties at each
// release) get the same idle expiry as the others, without a full refresh.
func TestRedisRecreatedKeysExpire(t *testing.T) {
	c, m := miniClient(t)
	s := core.NewRedis(c, "recreate", 1)
	defer s.Close()
	ctx := context.Background()
	ok(t, acquire(t, s).Release(ctx))
	hp := acquire(t, s) // H and HI created again
	w := make(chan error, 1)
	go func() {
		p, err := s.Acquire(ctx)
		if err == nil {
			err = p.Release(ctx)
		}
		w <- err
	}()
	waitQueued(t, s, 1) // Q created
	for _, k := range m.Keys() {
		if ttl := m.TTL(k); ttl <= 0 {
			t.Errorf("key %q has no idle expiry", k)
		}
	}
	ok(t, hp.Release(ctx))
	ok(t, <-w)
}

// Defect 2 with a client that honours ctx deadlines: a cancellation (no
// deadline) still ends the call at once, not at the operation timeout.
func TestFaultCancelWithContextTimeoutClient(t *testing.T) {
	p := newFaultProxy(t, coretest.RedisAddr(t))
	s := core.NewRedis(p.client(t, &redis.Options{ContextTimeoutEnabled: true}), "ctxc", 1,
		core.WithKeyPrefix(uniquePrefix(t)), core.WithOperationTimeout(5*time.Second))
	defer s.Close()
	ctx := context.Background()
	ok(t, tryAcquire(t, s).Release(ctx))
	p.blackhole()
	defer p.heal()
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
