package redissem

import (
	"context"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/internal/testwait"
)

// TestLeasedBurstAsksForTheHeadOnly: limit 4, process A holds all four
// permits. Three callers of process B arrive at once, before any of them
// is queued in B (B's beat slot is held, so all three wait for the take
// that asks Redis for capacity). B's take asks for what its head caller
// needs, one unit, not for the three callers' sum: so A's first release
// serves B's head at once, instead of B holding its place at the head of
// the fleet's queue until three units were handed to it.
func TestLeasedBurstAsksForTheHeadOnly(t *testing.T) {
	ctx, _, _, a, b := loggedPair(t, 4)

	var held []*core.Permit
	for range 4 {
		p, err := a.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}

	b.l.slot <- struct{}{} // B's callers wait for the slot: all three arriving
	bctx, stop := context.WithCancel(ctx)
	defer stop()
	got := make(chan *core.Permit, 3)
	for range 3 {
		go func() {
			p, err := b.Acquire(bctx)
			if err != nil && bctx.Err() == nil {
				t.Errorf("B's Acquire: %v", err)
			}
			got <- p
		}()
	}
	testwait.Until(t, time.Minute, "B's three callers not arriving", func() bool {
		b.l.mu.Lock()
		defer b.l.mu.Unlock()
		return b.l.demand == 3 && b.l.loc.State().WaitN == 0
	})
	<-b.l.slot
	testwait.Until(t, time.Minute, "B not queued in Redis with its callers queued locally", func() bool {
		b.l.mu.Lock()
		defer b.l.mu.Unlock()
		return b.l.reportedNeed > 0 && b.l.loc.State().WaitN == 3 && b.l.beatGen == b.l.doneGen
	})
	b.l.mu.Lock()
	need := b.l.reportedNeed
	b.l.mu.Unlock()
	if need != 1 {
		t.Fatalf("B asked Redis for a head of %d units, want 1 (its head caller's weight)", need)
	}

	// One release of A serves one caller of B.
	if err := held[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	var first *core.Permit
	select {
	case first = <-got:
	case <-ctx.Done():
		t.Fatal("A's release served no caller of B")
	}
	if first == nil {
		return // B's Acquire failed: reported above
	}
	// (B's other two callers wait for B's next beat, an hour away here.)
	stop()
	for range 2 {
		if p := <-got; p != nil {
			t.Error("a second caller of B was granted a permit while A held the other three")
			_ = p.Release(ctx)
		}
	}
	for _, p := range append(held[1:], first) {
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLeasedServedProcessGrowsIntoFreedCapacity: limit 2, process A holds
// both permits and process B has two callers, so B queues in Redis for
// its head. A's first release hands B one unit, and the fleet's queue is
// then empty while B's second caller still waits: B runs a full beat at
// once (nothing else would before its heartbeat, an hour away here), which
// finds B below its fair target and has it beat again every rebalance.
// Once A releases its second permit and gives its idle share back, B takes
// that unit and its second caller is served.
func TestLeasedServedProcessGrowsIntoFreedCapacity(t *testing.T) {
	ctx, _, c, a, _ := loggedPair(t, 2)
	b := NewLeased(c, "pair", 2, WithKeyPrefix(a.s.b.cfg.prefix), WithDefaultLeaseTTL(time.Hour))
	t.Cleanup(func() { _ = b.Close() })

	pa1, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pa2, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *core.Permit, 2)
	for range 2 {
		go func() {
			p, err := b.Acquire(ctx)
			if err != nil {
				t.Errorf("B's Acquire: %v", err)
			}
			got <- p
		}()
	}
	testwait.Until(t, time.Minute, "B's callers not queued", func() bool {
		b.l.mu.Lock()
		defer b.l.mu.Unlock()
		return b.l.loc.State().WaitN == 2 && b.l.reportedNeed == 1 && b.l.beatGen == b.l.doneGen
	})
	queued, _ := beats(b.l)

	if err := pa1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	pb1 := <-got
	if pb1 == nil {
		return
	}
	testwait.Until(t, time.Minute, "B did not beat once served with a caller still waiting", func() bool {
		gen, _ := beats(b.l)
		return gen > queued
	})
	if err := pa2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case pb2 := <-got:
		if pb2 != nil {
			if err := pb2.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	case <-ctx.Done():
		t.Fatal("B's second caller not served once A's share went back")
	}
	if err := pb1.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
