package redissem_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/testwait"
)

// TestLeasedJoinerIsServedWithoutWaitingForAHeartbeat: process A holds
// the whole limit of 4, and its 4 callers keep taking it again (no hold, a
// closed loop: each finds its own unit free). Then process B asks for one
// permit. Heartbeats come once per TTL/3, 20 minutes here, and A, alone at
// its target, has no reason to rebalance: B must be served through what
// its Acquire tells Redis (B queues, Redis tells A by a push, and A gives a
// unit back at its next release). A stall until A's next heartbeat fails
// the test at B's ctx deadline.
func TestLeasedJoinerIsServedWithoutWaitingForAHeartbeat(t *testing.T) {
	const limit = 4
	prefix := uniquePrefix(t)
	a := redissem.NewLeased(realClient(t), "joiner", limit, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(time.Hour))
	b := redissem.NewLeased(realClient(t), "joiner", limit, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(time.Hour))
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var grants atomic.Int64
	warm := make(chan struct{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var warmOnce sync.Once
	errs := make(chan error, limit)
	for range limit {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				p, err := a.Acquire(ctx)
				if err != nil {
					errs <- err
					return
				}
				if grants.Add(1) == 200 {
					warmOnce.Do(func() { close(warm) })
				}
				_ = p.Release(ctx)
			}
		})
	}
	select {
	case <-warm:
	case err := <-errs:
		t.Fatal(err)
	}
	// A's share, as Redis holds it, comes to the whole limit: at once, or
	// by the beat that A's callers ask for when they come faster than its
	// first take. (Stats would give what A had in use at its last beat,
	// which may be nothing.)
	testwait.Until(t, 20*time.Second, "process A alone, with the whole limit", func() bool {
		snap, err := b.Inspect(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(snap.Holders) == 1 && snap.Holders[0].Weight == limit
	})
	before := grants.Load()
	p, err := b.Acquire(ctx)
	after := grants.Load()
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("B's Acquire while A held the whole limit: %v (A granted %d meanwhile)", err, after-before)
	}
	_ = p.Release(ctx)
	t.Logf("A granted %d while B waited", after-before)
}
