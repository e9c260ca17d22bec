package redissem

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/internal/testwait"
)

// TestLeasedTurnServesTheCallersQueuedWhenItBegins: limit 1, processes A
// and B, heartbeats an hour away. The queue's order between processes
// holds, and a process that the queue serves grants, in process, to the
// callers that were queued in it when its turn began, and to no caller
// that came later. The expected order of grants: B's first caller (it
// queued before A's callers came), A's two callers (queued in A when B's
// release handed A the unit: one turn, the second grant made without a
// beat), B's second caller (it came while B held the unit, before A's
// turn), then A's third caller (it came during A's turn).
func TestLeasedTurnServesTheCallersQueuedWhenItBegins(t *testing.T) {
	ctx, _, c, a, b := loggedPair(t, 1)
	keepShares(a, b)

	type grant struct {
		p   *core.Permit
		at  int64
		err error
	}
	var seq atomic.Int64 // orders the events of the timeline
	acquire := func(s *Leased) chan grant {
		ch := make(chan grant, 1)
		go func() {
			p, err := s.Acquire(ctx)
			ch <- grant{p, seq.Add(1), err}
		}()
		return ch
	}
	waitingIn := func(s *Leased, n int64) {
		t.Helper()
		testwait.Until(t, time.Minute, "callers not queued", func() bool {
			s.l.mu.Lock()
			defer s.l.mu.Unlock()
			return s.l.loc.State().WaitN == n && s.l.beatGen == s.l.doneGen && len(s.l.wake) == 0
		})
	}
	contended := func(s *Leased) {
		t.Helper()
		testwait.Until(t, time.Minute, "not told that the other process waits", func() bool {
			s.l.mu.Lock()
			defer s.l.mu.Unlock()
			return s.l.contended
		})
	}
	granted := func(ch chan grant, who string) grant {
		t.Helper()
		g := <-ch
		if g.err != nil {
			t.Fatalf("%s: %v", who, g.err)
		}
		return g
	}
	notYet := func(ch chan grant, who string) {
		t.Helper()
		select {
		case g := <-ch:
			t.Fatalf("%s granted (event %d, err %v) out of turn", who, g.at, g.err)
		default:
		}
	}
	release := func(p *core.Permit) int64 {
		t.Helper()
		at := seq.Add(1)
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
		return at
	}

	p0, err := a.Acquire(ctx) // free capacity: no turn
	if err != nil {
		t.Fatal(err)
	}
	b1 := acquire(b)
	contended(a)
	waitingIn(b, 1)
	a1 := acquire(a)
	waitingIn(a, 1)
	a2 := acquire(a)
	waitingIn(a, 2)

	// A took its unit from free capacity: its release hands it to B, whose
	// caller came first, and A joins the queue for its two callers.
	rel0 := release(p0)
	gb1 := granted(b1, "B's first caller")
	notYet(a1, "A's first caller")
	contended(b)
	b2 := acquire(b)
	waitingIn(b, 1)

	// B's release hands the unit to A: A's turn serves its two callers.
	relB1 := release(gb1.p)
	ga1 := granted(a1, "A's first caller")
	a3 := acquire(a) // during A's turn: served in its next one
	waitingIn(a, 2)
	beatsA, _ := beats(a.l)
	relA1 := release(ga1.p)
	ga2 := granted(a2, "A's second caller")
	if n, _ := beats(a.l); n != beatsA {
		t.Fatalf("A beat %d times between its two grants of one turn: want none, the unit stays in the process", n-beatsA)
	}
	if share := redisShare(t, c, a.l); share != 1 {
		t.Fatalf("A's share in Redis %d during its turn, want 1", share)
	}
	notYet(b2, "B's second caller")

	// The turn's last release gives the unit back: B's second caller came
	// before A's third.
	relA2 := release(ga2.p)
	gb2 := granted(b2, "B's second caller")
	notYet(a3, "A's third caller")
	relB2 := release(gb2.p)
	ga3 := granted(a3, "A's third caller")
	release(ga3.p)

	// The timeline keeps the limit: each grant comes after the release of
	// the permit before it.
	grants := []int64{gb1.at, ga1.at, ga2.at, gb2.at, ga3.at}
	releases := []int64{rel0, relB1, relA1, relA2, relB2}
	for i := range grants {
		if grants[i] < releases[i] {
			t.Fatalf("grant %d (event %d) before the release of the permit before it (event %d): 2 holders, limit 1; grants %v, releases %v", i, grants[i], releases[i], grants, releases)
		}
	}
}
