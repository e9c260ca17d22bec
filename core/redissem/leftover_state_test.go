package redissem_test

// State left in Redis after a fault (counts, queue entries, tombstones)
// is repaired or refused, never kept as capacity lost.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/faultproxy"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
)

// With a pinned limit, a holder set that expired while idle must
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

// The clean-up of a timed-out TryAcquire may reach Redis before
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

// A release whose reply was lost after it took effect (and
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

// Lowering the limit fails at once every queued request heavier
// than it, not only the head.
func TestFaultLowerLimitFailsHeavyWaiters(t *testing.T) {
	forEach(t, func(t *testing.T, b impl) {
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
