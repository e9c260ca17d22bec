package semtest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/distsem/distsem/core"
)

// Inspect returns s's snapshot of at most limit holders and waiters,
// failing t on an error.
func Inspect(t *testing.T, s Sem, limit int) core.Snapshot {
	t.Helper()
	snap, err := s.Inspect(context.Background(), limit)
	ok(t, err)
	return snap
}

// queueWith starts an Acquire of s with opts in the background and waits
// until n callers are queued; the permit it gets is released at once.
func queueWith(t *testing.T, s Sem, n int64, done chan<- error, opts ...core.AcquireOption) {
	t.Helper()
	go func() {
		p, err := s.Acquire(context.Background(), opts...)
		if err == nil {
			err = p.Release(context.Background())
		}
		done <- err
	}()
	WaitQueued(t, s, n)
}

func testInspect(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.New(t, 3)
	if _, err := s.Inspect(ctx, 0); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("Inspect(0): err = %v, want ErrInvalidArgument", err)
	}
	if refused(t, s) {
		return
	}
	p1 := Acquire(t, s, core.WithWeight(2), core.WithNote("backup of db-3"))
	p2 := Acquire(t, s)
	done := make(chan error, 2)
	queueWith(t, s, 1, done, core.WithWeight(2), core.WithNote("first"))
	queueWith(t, s, 2, done)

	snap := Inspect(t, s, 10)
	if snap.Limit != 3 || snap.InUse != 3 || snap.Waiting != 2 || snap.OmittedWaiters != 0 || len(snap.Waiters) != 2 {
		t.Fatalf("snapshot %+v: want limit 3, 3 in use, 2 waiters all listed", snap)
	}
	for i, w := range snap.Waiters {
		if w.Position != int64(i) || w.Owner == "" || w.Flow != "" || w.Level != 0 {
			t.Errorf("waiter %d: %+v: want position %d, an owner, no flow or level", i, w, i)
		}
	}
	if w := snap.Waiters[0]; w.Weight != 2 || w.Note != "first" {
		t.Errorf("head waiter %+v: want weight 2, note %q", w, "first")
	}
	if w := snap.Waiters[1]; w.Weight != 1 || w.Note != "" {
		t.Errorf("second waiter %+v: want weight 1, no note", w)
	}
	if b.Shares {
		checkShares(t, snap)
	} else {
		checkHolders(t, snap, p1, p2)
		one := Inspect(t, s, 1)
		if len(one.Holders) != 1 || one.OmittedHolders != 1 || len(one.Waiters) != 1 || one.OmittedWaiters != 1 || one.Waiters[0].Note != "first" {
			t.Fatalf("Inspect(1) = %+v: want 1 holder and 1 waiter listed, 1 of each left out", one)
		}
	}
	ok(t, p1.Release(ctx))
	ok(t, p2.Release(ctx))
	for range 2 {
		ok(t, <-done)
	}
	WantStats(t, s, 0, 0)
	snap = Inspect(t, s, 10)
	if len(snap.Holders) != 0 && !b.Shares || len(snap.Waiters) != 0 || snap.InUse != 0 {
		t.Fatalf("after release: %+v, want no holder nor waiter", snap)
	}
}

// checkHolders checks that snap lists exactly the permits ps.
func checkHolders(t *testing.T, snap core.Snapshot, ps ...*core.Permit) {
	t.Helper()
	if len(snap.Holders) != len(ps) || snap.OmittedHolders != 0 {
		t.Fatalf("holders %+v (%d left out): want %d", snap.Holders, snap.OmittedHolders, len(ps))
	}
	for _, p := range ps {
		var h *core.Holder
		for i := range snap.Holders {
			if snap.Holders[i].Token == p.Token() {
				h = &snap.Holders[i]
			}
		}
		switch {
		case h == nil:
			t.Errorf("the permit of token %d is not listed in %+v", p.Token(), snap.Holders)
		case h.ID != p.ID() || h.Weight != p.Weight() || h.Owner == "" || !h.GrantedAt.Equal(p.GrantedAt()):
			t.Errorf("holder %+v: want ID %q, weight %d, an owner, granted at %v", *h, p.ID(), p.Weight(), p.GrantedAt())
		case !h.LeaseEnd.IsZero() && !h.LeaseEnd.After(h.GrantedAt):
			t.Errorf("holder %+v: a lease should end after its grant", *h)
		case p == ps[0] && h.Note != "backup of db-3":
			t.Errorf("holder %+v: want note %q", *h, "backup of db-3")
		}
	}
}

// checkShares checks the holders of a backend of per-process shares: they
// hold at least the permits in use.
func checkShares(t *testing.T, snap core.Snapshot) {
	t.Helper()
	var sum int64
	for _, h := range snap.Holders {
		sum += h.Weight
		if h.Owner == "" {
			t.Errorf("share %+v: want an owner", h)
		}
	}
	if sum < snap.InUse {
		t.Fatalf("shares %+v hold %d, less than the %d in use", snap.Holders, sum, snap.InUse)
	}
}

func testInspectHostileNotes(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.New(t, 2)
	if refused(t, s) {
		return
	}
	for _, note := range []string{strings.Repeat("x", core.MaxNoteLen+1), "a\nb", "a\x00b", "\xff"} {
		if p, err := s.Acquire(ctx, core.WithNote(note)); !errors.Is(err, core.ErrInvalidArgument) {
			_ = p.Release(ctx)
			t.Fatalf("note %q: err = %v, want ErrInvalidArgument", note, err)
		}
	}
	hostile := []string{
		":|,#{}%'\"\\ h1:2:3 q1:1:1:",
		strings.Repeat("é", core.MaxNoteLen/2),
		"} {other} #x '..redis.call('FLUSHALL')..'",
	}
	held := Acquire(t, s, core.WithNote(hostile[0]))
	done := make(chan error, 2)
	queueWith(t, s, 1, done, core.WithWeight(2), core.WithNote(hostile[1]))
	queueWith(t, s, 2, done, core.WithNote(hostile[2]))
	snap := Inspect(t, s, 10)
	if snap.InUse != 1 || len(snap.Waiters) != 2 || snap.Waiters[0].Note != hostile[1] || snap.Waiters[1].Note != hostile[2] ||
		snap.Waiters[0].Weight != 2 || snap.Waiters[1].Weight != 1 {
		t.Fatalf("snapshot %+v: want the notes as given", snap)
	}
	if !b.Shares && (len(snap.Holders) != 1 || snap.Holders[0].Note != hostile[0] || snap.Holders[0].Token != held.Token()) {
		t.Fatalf("holders %+v: want the note %q as given", snap.Holders, hostile[0])
	}
	ok(t, held.Release(ctx))
	for range 2 {
		ok(t, <-done)
	}
	WantStats(t, s, 0, 0)
}

// refused reports whether s refuses Inspect with an error matching
// errors.ErrUnsupported, as a backend does whose state no single snapshot
// describes (core/redissem's Quorum): loudly, and never with a snapshot.
func refused(t *testing.T, s Sem) bool {
	t.Helper()
	snap, err := s.Inspect(context.Background(), 10)
	if errors.Is(err, errors.ErrUnsupported) {
		if snap.Limit != 0 || snap.Holders != nil || snap.Waiters != nil {
			t.Fatalf("Inspect refused with %v but returned %+v", err, snap)
		}
		t.Logf("Inspect is not supported: %v", err)
		return true
	}
	ok(t, err)
	return false
}
