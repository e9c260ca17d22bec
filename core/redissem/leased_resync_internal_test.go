package redissem

import (
	"context"
	"testing"
	"time"

	"github.com/distsem/distsem/core/internal/faultproxy"
	"github.com/distsem/distsem/internal/testwait"
)

// TestLeasedQueuedProcessResyncsAfterItsSubscriptionDrops: limit 1,
// process A holds the unit and process B is queued for it in Redis. A's
// release hands the unit to B, but the note is lost with B's subscription
// connection (a proxy holds it, then resets the connection). Once B has
// subscribed again it must ask Redis what it missed, and get the unit,
// rather than wait for its next heartbeat, 20 minutes away.
func TestLeasedQueuedProcessResyncsAfterItsSubscriptionDrops(t *testing.T) {
	p, cb, ca, prefix := proxiedAndDirect(t)
	a := slowLeased(t, ca, prefix, "dropped", 1)
	b := slowLeased(t, cb, prefix, "dropped", 1)
	keepShares(a, b)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	pa, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := acquireAndRelease(ctx, b, 30*time.Second)
	testwait.Until(t, time.Minute, "A not told that B waits", func() bool {
		a.l.mu.Lock()
		defer a.l.mu.Unlock()
		return a.l.contended
	})
	testwait.Until(t, time.Minute, "B's beats not done", func() bool { return quiet(b.l) })

	p.SetHold(faultproxy.Tagged, faultproxy.Downstream, true) // B's notes wait in the proxy
	t.Cleanup(func() { p.SetHold(faultproxy.Tagged, faultproxy.Downstream, false) })
	if err := pa.Release(ctx); err != nil { // gives the unit to B, in Redis
		t.Fatal(err)
	}
	if share := shareInRedis(t, ctx, ca, b.l); share != 1 {
		t.Fatalf("B's share in Redis after A's release: %d, want 1", share)
	}
	p.ResetOpen(faultproxy.Tagged) // the note is lost with the connection
	p.SetHold(faultproxy.Tagged, faultproxy.Downstream, false)
	if err := <-got; err != nil {
		t.Fatalf("B, whose hand-off note was lost with its subscription: %v", err)
	}
}
