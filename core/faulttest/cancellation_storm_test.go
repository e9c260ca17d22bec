package faulttest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/testwait"
)

// TestCancellationStorm queues 200 waiters behind a held permit and cancels
// them all at once. Each must return promptly (the p99 is logged; the
// assertion is a generous 2s), the queue must be empty afterwards, and the
// permit, once released, must go to the next caller at once.
func TestCancellationStorm(t *testing.T) {
	const (
		waiters = 200
		bound   = 2 * time.Second
	)
	srv := sharedServer(t)
	pfx, name := prefix(t), "storm"
	c := newClient(t, srv.addr())
	holder := redissem.New(newClient(t, srv.addr()), name, 1, redissem.WithKeyPrefix(pfx), redissem.WithDefaultLeaseTTL(5*time.Second))
	defer holder.Close()
	sem := redissem.New(c, name, 1, redissem.WithKeyPrefix(pfx), redissem.WithDefaultLeaseTTL(5*time.Second))
	defer sem.Close()
	bg := context.Background()
	held, err := holder.Acquire(bg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	var cancelledAt time.Time
	var mu sync.Mutex
	var took []time.Duration
	var wg sync.WaitGroup
	var granted int
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := sem.Acquire(ctx)
			d := time.Since(cancelledAt)
			mu.Lock()
			defer mu.Unlock()
			took = append(took, d)
			if err == nil {
				granted++
				release(p)
			}
		}()
	}
	awaitWaiting(t, holder, waiters, 30*time.Second)
	mu.Lock()
	cancelledAt = time.Now()
	mu.Unlock()
	cancel()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled waiters did not all return within 30s")
	}
	if granted > 0 {
		t.Errorf("%d cancelled waiters got a permit, while it was held", granted)
	}
	p50, p99, worst := pct(took, 0.5), pct(took, 0.99), pct(took, 1)
	if worst > bound {
		t.Errorf("slowest cancelled waiter returned after %v, want within %v", worst, bound)
	}
	// The queue is empty: clean-up may run in the background, briefly.
	var emptyAfter time.Duration
	var lastSt core.Stats
	var lastErr error
	emptied := false
	defer func() {
		if !emptied {
			t.Logf("last look at the queue: %d waiters (err %v)", lastSt.Waiting, lastErr)
		}
	}()
	testwait.Until(t, bound-time.Since(cancelledAt), "queue still holds waiters after the cancellation", func() bool {
		lastSt, lastErr = holder.Stats(bg)
		if lastErr == nil && lastSt.Waiting == 0 {
			emptyAfter = time.Since(cancelledAt)
			return true
		}
		return false
	})
	emptied = true
	release(held)
	// The next grant is immediate: TryAcquire never waits, so it succeeds
	// only if the permit went to nobody else.
	begin := time.Now()
	p, err := holder.TryAcquire(bg)
	next := time.Since(begin)
	if err != nil {
		t.Errorf("TryAcquire after the storm: %v; the permit went to a cancelled waiter", err)
	}
	release(p)
	figure(t, "cancellation_storm", "waiters", waiters, "return_p50", p50, "return_p99", p99, "return_max", worst,
		"queue_empty_after", emptyAfter, "next_grant", next)
	checkCounts(t, holder, c, pfx, name)
}
