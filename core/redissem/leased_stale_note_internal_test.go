package redissem

import (
	"context"
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

	ver := useAndLeave(ctx, t, c, a)
	a.l.pushed(1, true, ver) // sent to the entry before A gave its share back
	a.l.mu.Lock()
	share, contended := a.l.share, a.l.contended
	a.l.mu.Unlock()
	if share != 0 || contended {
		t.Fatalf("after a note to the entry A left: share %d, contended %v; want 0, false", share, contended)
	}

	log.take()
	p, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ran := log.take(); !slices.Equal(ran, []string{"take"}) {
		t.Fatalf("A's Acquire after it left ran %v, want one take", ran)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLeasedNoteAfterHashMadeAnewIsNotStale: process A gave its share back
// and left; then the shares hash went (it expired, or Redis lost it) and
// another process's first use made it anew. A note that the new hash sends
// to A (after A's next take queued it there, possibly before A has read
// that take's reply) is not taken for a note to the entry A left: it
// would otherwise be dropped, and A would wait for a heartbeat with its
// unit handed to it.
func TestLeasedNoteAfterHashMadeAnewIsNotStale(t *testing.T) {
	ctx, _, c, a, b := loggedPair(t, 1)

	useAndLeave(ctx, t, c, a)
	if err := c.Del(ctx, a.l.keys[0]).Err(); err != nil {
		t.Fatal(err)
	}
	p, err := b.Acquire(ctx) // B's first use makes the hash anew
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Release(ctx) }()
	v, err := c.HGet(ctx, a.l.keys[0], "v").Int64()
	if err != nil {
		t.Fatal(err)
	}

	a.l.pushed(1, false, v+1) // as the new hash would number a hand-off to A
	a.l.mu.Lock()
	ver, leftVer := a.l.ver, a.l.leftVer
	a.l.mu.Unlock()
	if ver != v+1 {
		t.Fatalf("A's note of version %d from the hash made anew was dropped (A left at version %d)", v+1, leftVer)
	}
}

// useAndLeave takes and releases a permit of a, and waits until a has given
// its unused share back and left (its entry gone from Redis); it returns
// the version of a's share while it held the permit.
func useAndLeave(ctx context.Context, t *testing.T, c *redis.Client, a *Leased) int64 {
	t.Helper()
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
	return ver
}
