package redissem_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/testwait"
)

// adoptClients runs f on miniredis and on a real redis-server, each
// subtest with its own key prefix.
func adoptClients(t *testing.T, f func(t *testing.T, c redis.UniversalClient, prefix string)) {
	t.Run("miniredis", func(t *testing.T) {
		c, _ := miniClient(t)
		f(t, c, uniquePrefix(t))
	})
	t.Run("redis", func(t *testing.T) { f(t, realClient(t), uniquePrefix(t)) })
}

// leaseLeft returns how long holder id's lease has left, on the server's
// clock, or a negative duration if id holds nothing.
func leaseLeft(t *testing.T, c redis.UniversalClient, prefix, name, id string) time.Duration {
	t.Helper()
	ctx := context.Background()
	end, err := c.ZScore(ctx, prefix+"{"+name+"}:h", id).Result()
	if errors.Is(err, redis.Nil) {
		return -1
	}
	ok(t, err)
	now, err := c.Time(ctx).Result()
	ok(t, err)
	return time.UnixMilli(int64(end)).Sub(now)
}

// waitRenewals returns once holder id's lease end has moved forward n
// times (an observation of Redis, paced, not a sleep for synchronisation).
func waitRenewals(t *testing.T, c redis.UniversalClient, prefix, name, id string, n int) {
	t.Helper()
	key := prefix + "{" + name + "}:h"
	last, done := -1.0, false
	defer func() {
		if !done {
			t.Logf("lease of %s: %d renewals still missing", id, n)
		}
	}()
	testwait.Until(t, time.Minute, fmt.Sprintf("lease of %s not renewed %d times within a minute", id, n), func() bool {
		end, err := c.ZScore(context.Background(), key, id).Result()
		if err != nil {
			t.Fatalf("lease of %s: %v", id, err)
		}
		if end > last {
			if last >= 0 {
				n--
			}
			last = end
		}
		return n <= 0
	})
	done = true
}

// lostWithin waits (bounded) for p's Lost channel; what says which permit
// or after what.
func lostWithin(t *testing.T, p *core.Permit, what string) {
	t.Helper()
	select {
	case <-p.Lost():
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: Lost not closed within 10s", what)
	}
}

// TestAdoptTakesOverLease: another backend (a process) adopts a permit by
// its id: same weight, token and grant time, renewed by the adopter past
// the original lease, while the original permit reports Lost and its
// Release ErrNotHeld; the capacity stays taken until the adopter releases.
func TestAdoptTakesOverLease(t *testing.T) {
	adoptClients(t, func(t *testing.T, c redis.UniversalClient, prefix string) {
		const ttlA, ttlB = 300 * time.Millisecond, 3 * time.Second
		a := redissem.New(c, "adopt", 3, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(ttlA))
		defer a.Close()
		b := redissem.New(c, "adopt", 3, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(ttlB))
		defer b.Close()
		ctx := context.Background()
		pa := acquire(t, a, core.WithWeight(2))
		if pa.ID() == "" {
			t.Fatal("a Redis permit has an empty ID")
		}
		pb, err := b.Adopt(ctx, pa.ID())
		ok(t, err)
		if pb.Weight() != 2 || pb.Token() != pa.Token() || !pb.GrantedAt().Equal(pa.GrantedAt()) {
			t.Fatalf("adopted weight %d token %d at %v, want %d %d %v", pb.Weight(), pb.Token(), pb.GrantedAt(),
				pa.Weight(), pa.Token(), pa.GrantedAt())
		}
		if pb.ID() == "" || pb.ID() == pa.ID() {
			t.Fatalf("adopted ID %q, original %q: want a new, non-empty one", pb.ID(), pa.ID())
		}
		// The adopter's lease is its own default TTL.
		if left := leaseLeft(t, c, prefix, "adopt", pb.ID()); left < ttlB/2 || left > ttlB {
			t.Fatalf("adopted lease has %v left, want about %v", left, ttlB)
		}
		lostWithin(t, pa, "the original permit after Adopt")
		if err := pa.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
			t.Fatalf("Release of the adopted-away permit: %v, want ErrNotHeld", err)
		}
		if _, err := b.Adopt(ctx, pa.ID()); !errors.Is(err, core.ErrNotHeld) {
			t.Fatalf("second Adopt of the old id: %v, want ErrNotHeld", err)
		}
		if err := a.ReleaseID(ctx, pa.ID()); !errors.Is(err, core.ErrNotHeld) {
			t.Fatalf("ReleaseID of the old id: %v, want ErrNotHeld", err)
		}
		waitRenewals(t, c, prefix, "adopt", pb.ID(), 2) // many leases of A past the adoption
		select {
		case <-pb.Lost():
			t.Fatal("the adopted permit was lost while its adopter renewed it")
		default:
		}
		if _, err := a.TryAcquire(ctx, core.WithWeight(2)); !errors.Is(err, core.ErrNoPermit) {
			t.Fatalf("TryAcquire of the adopted capacity: %v, want ErrNoPermit", err)
		}
		wantStats(t, a, 2, 0)
		ok(t, pb.Release(ctx))
		wantStats(t, a, 0, 0)
		ok(t, tryAcquire(t, a).Release(ctx))
	})
}

// TestReleaseIDFromAnotherProcess: a backend that does not hold the permit
// releases it by id; the queued waiter gets it at once, the holder sees
// Lost, and a retried ReleaseID still answers nil.
func TestReleaseIDFromAnotherProcess(t *testing.T) {
	adoptClients(t, func(t *testing.T, c redis.UniversalClient, prefix string) {
		opts := []redissem.Option{redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(time.Second)}
		a := redissem.New(c, "relid", 1, opts...)
		defer a.Close()
		b := redissem.New(c, "relid", 1, opts...)
		defer b.Close()
		ctx := context.Background()
		pa := acquire(t, a)
		got := make(chan *core.Permit, 1)
		go func() {
			p, err := a.Acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- p
		}()
		waitQueued(t, a, 1)
		if err := b.ReleaseID(ctx, "no-such.id"); !errors.Is(err, core.ErrNotHeld) {
			t.Fatalf("ReleaseID of an unknown id: %v, want ErrNotHeld", err)
		}
		ok(t, b.ReleaseID(ctx, pa.ID()))
		var pw *core.Permit
		select {
		case pw = <-got:
		case <-time.After(10 * time.Second):
			t.Fatal("the waiter was not granted the permit released by id")
		}
		if pw == nil {
			t.FailNow()
		}
		ok(t, b.ReleaseID(ctx, pa.ID())) // a retry after a lost reply
		lostWithin(t, pa, "the permit released by id")
		if err := pa.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
			t.Fatalf("Release of a permit released by id: %v, want ErrNotHeld", err)
		}
		wantStats(t, a, 1, 0)
		ok(t, pw.Release(ctx))
		wantStats(t, a, 0, 0)
	})
}

// TestAdoptBadInput: ids that cannot be permit ids, unknown ids, a done
// ctx and a closed semaphore.
func TestAdoptBadInput(t *testing.T) {
	c, _ := miniClient(t)
	s := redissem.New(c, "bad", 1)
	ctx := context.Background()
	for _, id := range []string{"", "a:b", "a,b", "a b", strings.Repeat("x", 65)} {
		if _, err := s.Adopt(ctx, id); !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("Adopt(%q): %v, want ErrInvalidArgument", id, err)
		}
		if err := s.ReleaseID(ctx, id); !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("ReleaseID(%q): %v, want ErrInvalidArgument", id, err)
		}
	}
	if _, err := s.Adopt(ctx, "unknown.1"); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Adopt of an unknown id: %v, want ErrNotHeld", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Adopt(done, "unknown.1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Adopt with a cancelled ctx: %v, want context.Canceled", err)
	}
	ok(t, s.Close())
	if _, err := s.Adopt(ctx, "unknown.1"); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("Adopt after Close: %v, want ErrClosed", err)
	}
}

// TestAdoptUnderMinimalACL runs the scripts of Adopt, ReleaseID and
// SetLeaseTTL as a Redis user with only the rights of aclCommands.
func TestAdoptUnderMinimalACL(t *testing.T) {
	prefix := uniquePrefix(t)
	c := aclClient(t, prefix)
	ctx := context.Background()
	opts := []redissem.Option{redissem.WithKeyPrefix(prefix)}
	a := redissem.New(c, "acl", 2, opts...)
	defer a.Close()
	b := redissem.New(c, "acl", 2, opts...)
	defer b.Close()
	p1 := acquire(t, a)
	p2 := acquire(t, a)
	ok(t, p1.SetLeaseTTL(ctx, time.Minute))
	pb, err := b.Adopt(ctx, p1.ID())
	ok(t, err)
	ok(t, b.ReleaseID(ctx, p2.ID()))
	ok(t, pb.Release(ctx))
	wantStats(t, a, 0, 0)
}

// TestKeyedAdopt: a keyed permit's ID is adopted or released by id through
// another Keyed of the same name, given the key; an in-process Keyed has
// no ids.
func TestKeyedAdopt(t *testing.T) {
	adoptClients(t, func(t *testing.T, c redis.UniversalClient, prefix string) {
		opts := []redissem.Option{redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(300 * time.Millisecond)}
		k1 := redissem.NewKeyed(c, "kad", 2, opts...)
		defer k1.Close()
		k2 := redissem.NewKeyed(c, "kad", 2, opts...)
		defer k2.Close()
		ctx := context.Background()
		p, err := k1.Acquire(ctx, "GET /x")
		ok(t, err)
		if p.ID() == "" {
			t.Fatal("a Redis keyed permit has an empty ID")
		}
		if _, err := k2.Adopt(ctx, "GET /y", p.ID()); !errors.Is(err, core.ErrNotHeld) {
			t.Fatalf("Adopt under another key: %v, want ErrNotHeld", err)
		}
		pb, err := k2.Adopt(ctx, "GET /x", p.ID())
		ok(t, err)
		if pb.Token() != p.Token() || pb.ID() == p.ID() {
			t.Fatalf("adopted token %d ID %q; want token %d and a new ID", pb.Token(), pb.ID(), p.Token())
		}
		lostWithin(t, p, "the keyed permit adopted away")
		if err := p.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
			t.Fatalf("Release: %v, want ErrNotHeld", err)
		}
		p2, err := k1.Acquire(ctx, "GET /x")
		ok(t, err)
		ok(t, k2.ReleaseID(ctx, "GET /x", p2.ID()))
		if st, err := k1.Stats(ctx, "GET /x"); err != nil || st.InUse != 1 {
			t.Fatalf("stats = %+v, %v; want the adopted permit alone in use", st, err)
		}
		if err := p2.Release(ctx); !errors.Is(err, core.ErrNotHeld) {
			t.Fatalf("Release of a keyed permit released by id: %v, want ErrNotHeld", err)
		}
		ok(t, pb.Release(ctx))
		if st, err := k1.Stats(ctx, "GET /x"); err != nil || st.InUse != 0 {
			t.Fatalf("stats = %+v, %v; want none in use", st, err)
		}
	})
	l := core.NewLocalKeyed(1)
	defer l.Close()
	lp, err := l.Acquire(context.Background(), "a")
	ok(t, err)
	if lp.ID() != "" {
		t.Fatalf("an in-process keyed permit has ID %q", lp.ID())
	}
	if _, err := l.Adopt(context.Background(), "a", "x.1"); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("Adopt on an in-process Keyed: %v, want ErrInvalidArgument", err)
	}
	ok(t, lp.Release(context.Background()))
}
