package redissem

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/internal/testwait"
)

// countLoopStarts puts l's loop's first beat an hour after its caller
// comes, and counts the starts of the loop goroutines of l's backend; set
// before l's first use.
func countLoopStarts(l *leased) *atomic.Int64 {
	var n atomic.Int64
	l.firstBeat = time.Hour
	l.s.b.hooks = &testHooks{loopStarts: func() { n.Add(1) }}
	return &n
}

// loopUnstarted reports whether l's loop has begun and its goroutine has
// not started.
func loopUnstarted(l *leased) bool {
	l.start.mu.Lock()
	defer l.start.mu.Unlock()
	return l.start.t != nil
}

// loneHolder acquires a permit of l for a lone caller, and fails unless
// l's loop has begun and its goroutine has not started.
func loneHolder(t *testing.T, ctx context.Context, l *leased) *core.Permit {
	t.Helper()
	p, err := l.acquire(ctx, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !loopUnstarted(l) {
		t.Fatal("the loop has not begun, or its goroutine started, during a lone use")
	}
	return p
}

// TestLeasedLoneUseStartsNoLoop: a lone caller's use, a single-use take
// and a give-back that leaves, needs no beat of the loop: its goroutine
// never starts, and the loop has ended once the give-back left.
func TestLeasedLoneUseStartsNoLoop(t *testing.T) {
	ctx, c, a, _ := singleUseFleet(t)
	starts := countLoopStarts(a)
	p := loneHolder(t, ctx, a)
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	loopStops(t, a, "the loop did not end after the lone use's give-back")
	if n := starts.Load(); n != 0 {
		t.Fatalf("the loop's goroutine started %d times for a lone use, want 0", n)
	}
	if loopUnstarted(a) {
		t.Fatal("the loop ended, but its start is still armed")
	}
	if e := entryInRedis(t, ctx, c, a); e != nil {
		t.Fatalf("the process's entry after its give-back left: %v, want none", e)
	}
}

// TestLeasedLocalHandOffStartsTheLoop: a caller queued locally behind a
// lone holder whose share is the whole limit needs no beat, and the loop
// does not start; the release's local hand-off ends the single use and
// asks for a beat of share.lua at once, which starts the loop then rather
// than at its first beat (an hour here).
func TestLeasedLocalHandOffStartsTheLoop(t *testing.T) {
	ctx, _, a, _ := singleUseFleet(t)
	starts := countLoopStarts(a)
	p, err := a.acquire(ctx, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		q, err := a.acquire(ctx, false, nil)
		if err == nil {
			err = q.Release(ctx)
		}
		got <- err
	}()
	testwait.Until(t, time.Minute, "a caller did not queue locally", func() bool {
		return a.loc.State().WaitN == 1
	})
	if n := starts.Load(); n != 0 {
		t.Fatalf("the loop's goroutine started %d times for a caller queued locally, want 0", n)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, time.Minute, "the loop's goroutine did not start at the local hand-off", func() bool {
		return starts.Load() == 1
	})
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// TestLeasedCloseEndsALoopNeverStarted: Close does for a loop whose
// goroutine never started what that goroutine would have done: the held
// permit is marked lost and its release reports ErrNotHeld, and the
// loop's start is disarmed.
func TestLeasedCloseEndsALoopNeverStarted(t *testing.T) {
	ctx, _, a, _ := singleUseFleet(t)
	starts := countLoopStarts(a)
	p := loneHolder(t, ctx, a)
	if err := a.s.b.close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Lost():
	default:
		t.Fatal("Close did not mark the permit of a loop never started lost")
	}
	if loopUnstarted(a) {
		t.Fatal("Close left the loop's start armed")
	}
	if n := starts.Load(); n != 0 {
		t.Fatalf("the loop's goroutine started %d times, want 0", n)
	}
	if err := p.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Release after Close = %v, want ErrNotHeld", err)
	}
}
