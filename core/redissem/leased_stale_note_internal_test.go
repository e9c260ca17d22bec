package redissem

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/internal/testwait"
)

// TestLeasedNoteToAnEntryLeftIsStale: a process that gave its share back
// and left (its entry deleted) may still receive a note that Redis sent to
// that entry earlier. The note is dropped, for it would give the process a
// share that it no longer has; its next Acquire then registers it again by
// one take, at once, rather than waiting for a heartbeat.
func TestLeasedNoteToAnEntryLeftIsStale(t *testing.T) {
	ctx, log, c, a, _ := loggedPair(t, 1)

	p, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a.l.mu.Lock()
	ver := a.l.ver
	a.l.mu.Unlock()
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, time.Minute, "A kept its unused share", func() bool {
		a.l.mu.Lock()
		registered := a.l.registered
		a.l.mu.Unlock()
		return !registered && errors.Is(c.HGet(ctx, a.l.keys[0], "p:"+a.l.pid).Err(), redis.Nil)
	})

	a.l.pushed(1, true, ver) // sent to the entry before A gave its share back
	a.l.mu.Lock()
	share, contended := a.l.share, a.l.contended
	a.l.mu.Unlock()
	if share != 0 || contended {
		t.Fatalf("after a note to the entry A left: share %d, contended %v; want 0, false", share, contended)
	}

	log.take()
	if p, err = a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if ran := log.take(); !slices.Equal(ran, []string{"take"}) {
		t.Fatalf("A's Acquire after it left ran %v, want one take", ran)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
