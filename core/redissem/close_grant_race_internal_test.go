package redissem

import (
	"context"
	"errors"
	"testing"

	"github.com/distsem/distsem/core"
)

// A grant racing Close, forced: a grant and Close are both ready when the
// waiter selects. The hook runs after the waiter queued and before its
// select: it releases the permit that blocks the waiter (the release
// script's reply carries the grant to this process's own waiter, delivered
// before Release returns), then closes the semaphore. Whichever case the
// select picks, Acquire returns ErrClosed, and the permit goes back to
// Redis before it returns. Twenty rounds: the select picks each case with
// probability 1/2.
func TestGrantAndCloseBothReadyAtSelect(t *testing.T) {
	c := miniClient(t)
	ctx := context.Background()
	for round := range 20 {
		s := New(c, "race", 1)
		hp, err := s.TryAcquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a, err := buildAcquire(s.b.cfg.leaseTTL, nil)
		if err != nil {
			t.Fatal(err)
		}
		a.queued = func() {
			if err := hp.Release(ctx); err != nil {
				t.Errorf("round %d: Release: %v", round, err)
			}
			s.b.mu.Lock()
			left := len(s.b.waiters)
			s.b.mu.Unlock()
			if left != 0 {
				t.Errorf("round %d: the grant was not delivered before Close (%d waiters)", round, left)
			}
			if err := s.Close(); err != nil {
				t.Errorf("round %d: Close: %v", round, err)
			}
		}
		p, err := s.wait(ctx, a)
		if p != nil || !errors.Is(err, core.ErrClosed) {
			t.Fatalf("round %d: Acquire with a grant and Close both ready: %v, %v; want ErrClosed", round, p, err)
		}
		other := New(c, "race", 1)
		q, err := other.TryAcquire(ctx)
		if err != nil {
			t.Fatalf("round %d: the raced grant was not given back: %v", round, err)
		}
		if err := q.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := other.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
