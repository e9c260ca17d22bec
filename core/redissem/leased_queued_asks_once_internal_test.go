package redissem

import (
	"slices"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/internal/testwait"
)

// TestLeasedQueuedProcessAsksOnce: limit 1, process A holds the permit.
// B's first Acquire queues B in Redis by one share_take.lua, run by the
// caller itself, and tells A that B waits; three more callers of B run no
// script while Redis holds B queued. A's release hands the unit to B by
// share_give.lua, and B's four callers are then served in turn from its
// share. share.lua runs at no point.
func TestLeasedQueuedProcessAsksOnce(t *testing.T) {
	ctx, log, _, a, b := loggedPair(t, 1)

	pa, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	log.take()
	got := make(chan *core.Permit, 4)
	acquire := func() {
		go func() {
			p, err := b.Acquire(ctx)
			if err != nil {
				t.Errorf("B's Acquire: %v", err)
			}
			got <- p
		}()
	}
	acquire()
	testwait.Until(t, time.Minute, "A not told that B waits", func() bool { return a.l.noRoom() != "" })
	testwait.Until(t, time.Minute, "B's beats not done", func() bool { return quiet(b.l) })
	if ran := log.take(); !slices.Equal(ran, []string{"take"}) {
		t.Fatalf("B's first Acquire ran %v, want one take (which queues B)", ran)
	}

	for range 3 {
		acquire()
	}
	testwait.Until(t, time.Minute, "B's callers not queued locally", func() bool {
		b.l.mu.Lock()
		defer b.l.mu.Unlock()
		return b.l.loc.State().WaitN == 4 && b.l.beatGen == b.l.doneGen && len(b.l.wake) == 0
	})
	if ran := log.take(); len(ran) != 0 {
		t.Fatalf("B's three more callers ran %v while Redis held B queued, want no script", ran)
	}

	if err := pa.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		p := <-got
		if p == nil {
			return
		}
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ran := log.take()
	if len(ran) == 0 || slices.ContainsFunc(ran, func(s string) bool { return s != "give" }) {
		t.Fatalf("A's release and B's four grants ran %v, want give-backs only (A's, and B's once idle)", ran)
	}
}
