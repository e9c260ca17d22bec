package consul_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/consul"
)

// pair returns two Semaphore values on the same semaphore, as two
// processes would have: separate sessions, separate renewal loops.
func pair(t *testing.T, limitA, limitB int64, optsA, optsB []core.Option) (a, b *consul.Semaphore) {
	t.Helper()
	c := newClient(t)
	prefix := core.WithKeyPrefix(uniquePrefix())
	a = consul.New(c, "lease", limitA, append([]core.Option{prefix}, optsA...)...)
	b = consul.New(c, "lease", limitB, append([]core.Option{prefix}, optsB...)...)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	return a, b
}

// A process that stops renewing (as if it died) loses its permit when its
// session expires, and the waiter of another process gets it.
func TestDeadHolderPermitComesBack(t *testing.T) {
	ctx := background()
	dead, live := pair(t, 1, 1, []core.Option{core.WithDefaultLeaseTTL(time.Second)}, nil)
	p, err := dead.Acquire(ctx)
	ok(t, err)
	got := make(chan error, 1)
	go func() {
		q, err := live.Acquire(ctx)
		if err == nil {
			err = q.Release(ctx)
		}
		got <- err
	}()
	waitQueued(t, live, 1)
	ok(t, dead.Close()) // stops renewal, keeps the session: it expires
	select {
	case <-p.Lost():
	default:
		t.Fatal("Close left a held permit's Lost open")
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	select {
	case err := <-got:
		ok(t, err)
	case <-wctx.Done():
		t.Fatal("the waiter did not get the dead holder's permit")
	}
	if err := p.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Release after the session expired: %v, want ErrNotHeld", err)
	}
	wantStats(t, live, 0, 0)
}

// A session that Consul drops (here destroyed by an operator) makes the
// held permit Lost, and its Release ErrNotHeld; the next Acquire of the
// same Semaphore works on a new session.
func TestSessionGoneMarksLost(t *testing.T) {
	ctx := background()
	c := newClient(t)
	s := consul.New(c, "gone", 1, core.WithKeyPrefix(uniquePrefix()), core.WithDefaultLeaseTTL(time.Second))
	t.Cleanup(func() { _ = s.Close() })
	p, err := s.Acquire(ctx)
	ok(t, err)
	sessions, _, err := c.Session().List(nil)
	ok(t, err)
	destroyed := 0
	for _, e := range sessions {
		if e.Name == "distsem gone" && e.LockDelay == 0 && e.Behavior == "delete" {
			_, err := c.Session().Destroy(e.ID, nil)
			ok(t, err)
			destroyed++
		}
	}
	if destroyed == 0 {
		t.Fatal("no session named \"distsem gone\" with LockDelay 0 and behavior delete")
	}
	select {
	case <-p.Lost():
	case <-time.After(30 * time.Second):
		t.Fatal("Lost not closed after the session was destroyed")
	}
	if err := p.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Release: %v, want ErrNotHeld", err)
	}
	q, err := s.TryAcquire(ctx)
	ok(t, err)
	if q.Token() <= p.Token() {
		t.Fatalf("token %d after %d: want increasing", q.Token(), p.Token())
	}
	ok(t, q.Release(ctx))
}

// The limit stored by the first user wins over another process's
// configured limit.
func TestStoredLimitWins(t *testing.T) {
	ctx := background()
	first, second := pair(t, 2, 5, nil, nil)
	p, err := first.Acquire(ctx)
	ok(t, err)
	st, err := second.Stats(ctx)
	ok(t, err)
	if st.Limit != 2 {
		t.Fatalf("limit = %d, want the stored 2", st.Limit)
	}
	q, err := second.TryAcquire(ctx)
	ok(t, err)
	if _, err := second.TryAcquire(ctx); !errors.Is(err, core.ErrNoPermit) {
		t.Fatalf("third permit of a limit of 2: %v", err)
	}
	ok(t, p.Release(ctx))
	ok(t, q.Release(ctx))
}
