package redissem

import (
	"context"
	"testing"
	"time"

	"github.com/distsem/distsem/core/internal/faultproxy"
	"github.com/distsem/distsem/internal/testwait"
)

// TestLeasedLoopListensBeforeItQueues: limit 1, process A holds the unit.
// Process B's subscription is slow to come up (a proxy holds its
// SUBSCRIBE), and B's loop makes its first beat (25 ms after B's caller
// came) meanwhile. That beat must wait for the subscription: had it queued
// B unheard, A's release would hand the unit to B by a note that nobody
// hears, and B would wait for its next heartbeat, 20 minutes away. Once
// the subscription is up, B's caller gets the unit.
func TestLeasedLoopListensBeforeItQueues(t *testing.T) {
	p, cb, ca, prefix := proxiedAndDirect(t)
	a := slowLeased(t, ca, prefix, "unheard", 1)
	b := NewLeased(cb, "unheard", 1, WithKeyPrefix(prefix), WithDefaultLeaseTTL(time.Hour), WithOperationTimeout(time.Minute))
	b.l.rebalance = time.Hour
	listening := make(chan struct{}, 1)
	b.l.s.b.hooks = &testHooks{loopListens: func() { // before any goroutine of the backend runs
		select {
		case listening <- struct{}{}:
		default:
		}
	}}
	t.Cleanup(func() { _ = b.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	pa, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.SetHold(faultproxy.Tagged, faultproxy.Upstream, true) // B's SUBSCRIBE waits in the proxy
	t.Cleanup(func() { p.SetHold(faultproxy.Tagged, faultproxy.Upstream, false) })
	got := acquireAndRelease(ctx, b, 30*time.Second)
	testwait.Until(t, time.Minute, "B's loop neither waited for its subscription nor queued B", func() bool {
		select {
		case <-listening:
			return true
		default:
			return shareInRedis(t, ctx, ca, b.l) >= 0 // queued unheard
		}
	})
	if err := pa.Release(ctx); err != nil {
		t.Fatal(err)
	}
	p.SetHold(faultproxy.Tagged, faultproxy.Upstream, false)
	if err := <-got; err != nil {
		t.Fatalf("B, whose subscription came up after A's release: %v", err)
	}
}
