package redissem_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
)

// TestLeasedShareGoneClosesLost removes the process's share from Redis:
// the next beat must close Lost on the permits it covered, and Release
// must report ErrNotHeld.
func TestLeasedShareGoneClosesLost(t *testing.T) {
	c, m := miniClient(t)
	s := redissem.NewLeased(c, "gone", 2, redissem.WithDefaultLeaseTTL(300*time.Millisecond))
	defer s.Close()
	p := acquire(t, s)
	m.Del("distsem:{gone}:ls")
	lostWithin(t, p, "after the share was deleted")
	if err := p.Release(context.Background()); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Release of a permit whose share was lost = %v, want ErrNotHeld", err)
	}
	// The process gets a new share and keeps working.
	acquire(t, s).Release(context.Background())
}

// TestLeasedUnreachableClosesLost stops Redis: once renewal has failed for
// longer than the lease, Lost is closed.
func TestLeasedUnreachableClosesLost(t *testing.T) {
	c, m := miniClient(t)
	s := redissem.NewLeased(c, "down", 2, redissem.WithDefaultLeaseTTL(300*time.Millisecond))
	defer s.Close()
	p := acquire(t, s)
	m.Close()
	lostWithin(t, p, "after Redis went away")
	if _, err := s.TryAcquire(context.Background()); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("TryAcquire without a share while Redis is down = %v, want ErrUnavailable", err)
	}
}

// TestLeasedCloseClosesLost: Close marks held permits lost, fails local
// waiters with ErrClosed, and later calls too.
func TestLeasedCloseClosesLost(t *testing.T) {
	c, _ := miniClient(t)
	s := redissem.NewLeased(c, "close", 1)
	p := acquire(t, s)
	got := make(chan error, 1)
	go func() { _, err := s.Acquire(context.Background()); got <- err }()
	waitQueued(t, s, 1)
	ok(t, s.Close())
	lostWithin(t, p, "after Close")
	if err := <-got; !errors.Is(err, core.ErrClosed) {
		t.Fatalf("queued Acquire after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Acquire(context.Background()); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("Acquire after Close = %v, want ErrClosed", err)
	}
}
