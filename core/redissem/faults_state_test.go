package redissem_test

// Regression tests for issue 7 defects 9-14: state left in Redis (counts,
// queue entries, tombstones) and Close.

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

// Defect 9: with a pinned limit, a holder set that expired while idle must
// not leave its permits counted for good.
func TestFaultPinnedLimitNoStrandedCount(t *testing.T) {
	c, m := miniClient(t)
	ctx := context.Background()
	s := redissem.New(c, "pin", 1)
	ok(t, s.SetLimit(ctx, 1))
	_ = acquire(t, s, core.WithLeaseTTL(200*time.Millisecond))
	ok(t, s.Close()) // as a crash: no release
	later := time.Now().Add(62 * time.Second)
	m.SetTime(later)
	m.FastForward(62 * time.Second)
	s2 := redissem.New(c, "pin", 1)
	defer s2.Close()
	wantStats(t, s2, 0, 0)
	pm, err := s2.TryAcquire(ctx)
	ok(t, err)
	ok(t, pm.Release(ctx))
}

// Defect 10: the clean-up of a timed-out TryAcquire may reach Redis before
// the acquire itself; the late acquire must then be refused.
func TestFaultLateAcquireRefused(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	prefix := uniquePrefix(t)
	s := redissem.New(proxyClient(t, p, nil), "late", 1, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(30*time.Second))
	defer s.Close()
	other := redissem.New(realClient(t), "late", 1, redissem.WithKeyPrefix(prefix))
	defer other.Close()
	ctx := context.Background()
	pm := acquire(t, s) // connection and clock estimate made
	ok(t, pm.Release(ctx))
	p.SetLatency(faultproxy.Upstream, faultproxy.Latency{Fixed: 300 * time.Millisecond}) // the acquire's bytes arrive late
	dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := s.TryAcquire(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline error", err)
	}
	p.SetLatency(faultproxy.Upstream, faultproxy.Latency{})
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
	p := newFaultProxy(t, servertest.RedisAddr(t))
	prefix := uniquePrefix(t)
	other := redissem.New(realClient(t), "closeq", 1, redissem.WithKeyPrefix(prefix))
	defer other.Close()
	c := redis.NewClient(&redis.Options{Addr: p.Addr()})
	s := redissem.New(c, "closeq", 1, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(30*time.Second),
		redissem.WithOperationTimeout(10*time.Second))
	ctx := context.Background()
	hp := acquire(t, other)
	errc := make(chan error, 1)
	go func() { _, err := s.Acquire(ctx); errc <- err }()
	waitQueued(t, other, 1)
	p.SetLatency(faultproxy.Upstream, faultproxy.Latency{Fixed: time.Second})
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
	p := newFaultProxy(t, servertest.RedisAddr(t))
	prefix := uniquePrefix(t)
	obs, queued := queueObserver()
	s := redissem.New(proxyClient(t, p, nil), "resync", 1, redissem.WithKeyPrefix(prefix),
		redissem.WithDefaultLeaseTTL(30*time.Second), redissem.WithObserver(obs))
	defer s.Close()
	other := redissem.New(realClient(t), "resync", 1, redissem.WithKeyPrefix(prefix))
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
	p.SetHold(faultproxy.All, faultproxy.Downstream, true)
	rel := make(chan error, 1)
	go func() { rel <- hp.Release(ctx) }()
	wantStats(t, other, 1, 0)        // released and handed on; the reply is held
	p.ResetOpen(faultproxy.Untagged) // and lost
	p.SetHold(faultproxy.All, faultproxy.Downstream, false)
	if err := <-rel; err != nil {
		t.Errorf("Release that took effect: %v, want nil", err)
	}
	within(t, 5*time.Second, "waiter woken after a lost reply (heartbeat every 10s)", func() error { return <-res })
	wantStats(t, other, 0, 0)
}

// Defect 14: no permit after Close.
func TestFaultNoPermitAfterClose(t *testing.T) {
	c := realClient(t)
	s := redissem.New(c, "closed", 1, redissem.WithKeyPrefix(uniquePrefix(t)))
	ok(t, s.Close())
	if pm, err := s.TryAcquire(context.Background()); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("TryAcquire after Close: %v, %v; want ErrClosed", pm, err)
	}
	if pm, err := s.Acquire(context.Background()); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("Acquire after Close: %v, %v; want ErrClosed", pm, err)
	}
}

// Defect 14: a grant that races Close either lost the race (Acquire returns
// ErrClosed and the grant is passed on) or won it (the permit was held
// before Close, which then marked it lost). Either way Acquire never hands
// out a permit that Close did not see, and no capacity is left behind.
func TestFaultGrantRacingClose(t *testing.T) {
	c := realClient(t)
	prefix := uniquePrefix(t)
	other := redissem.New(c, "race", 1, redissem.WithKeyPrefix(prefix))
	defer other.Close()
	ctx := context.Background()
	type result struct {
		pm  *core.Permit
		err error
	}
	for range 30 {
		s := redissem.New(c, "race", 1, redissem.WithKeyPrefix(prefix))
		hp := acquire(t, s)
		res := make(chan result, 1)
		go func() { pm, err := s.Acquire(ctx); res <- result{pm, err} }()
		waitQueued(t, other, 1)
		go func() { _ = hp.Release(ctx) }()
		ok(t, s.Close())
		r := <-res
		switch {
		case r.pm == nil && !errors.Is(r.err, core.ErrClosed):
			t.Fatalf("Acquire racing Close: %v, want a permit or ErrClosed", r.err)
		case r.pm != nil:
			select {
			case <-r.pm.Lost():
			default:
				t.Fatal("Acquire returned a permit that Close did not mark lost")
			}
			_ = r.pm.Release(ctx)
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

// Close with a queued waiter returns within its bound under a blackhole
// (the waiter's leave is bounded by the operation timeout, and the round
// trips that Close waits for end by the client's read and write timeouts,
// here the operation timeout), and the waiter returns ErrClosed.
func TestFaultCloseUnderBlackhole(t *testing.T) {
	p := newFaultProxy(t, servertest.RedisAddr(t))
	prefix := uniquePrefix(t)
	holder := redissem.New(realClient(t), "closebh", 1, redissem.WithKeyPrefix(prefix))
	defer holder.Close()
	const op = 300 * time.Millisecond
	s := redissem.New(proxyClient(t, p, &redis.Options{ReadTimeout: op, WriteTimeout: op}), "closebh", 1, redissem.WithKeyPrefix(prefix),
		redissem.WithDefaultLeaseTTL(time.Second), redissem.WithOperationTimeout(op))
	ctx := context.Background()
	hp := acquire(t, holder)
	defer hp.Release(ctx)
	errc := make(chan error, 1)
	go func() { _, err := s.Acquire(ctx); errc <- err }()
	waitQueued(t, holder, 1)
	ok(t, p.SetMode(faultproxy.Blackhole))
	defer p.SetMode(faultproxy.Pass)
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
	s := redissem.New(c, "recreate", 1)
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
