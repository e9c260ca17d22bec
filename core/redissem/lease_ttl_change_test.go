package redissem_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
)

// TestSetLeaseTTL lengthens and shortens a held lease; renewals keep the
// new TTL.
func TestSetLeaseTTL(t *testing.T) {
	adoptClients(t, func(t *testing.T, c redis.UniversalClient, prefix string) {
		s := redissem.New(c, "lease", 1, redissem.WithKeyPrefix(prefix), redissem.WithDefaultLeaseTTL(300*time.Millisecond))
		defer s.Close()
		ctx := context.Background()
		p := acquire(t, s)
		ok(t, p.SetLeaseTTL(ctx, 30*time.Second))
		if left := leaseLeft(t, c, prefix, "lease", p.ID()); left < 20*time.Second {
			t.Fatalf("lease has %v left after SetLeaseTTL(30s)", left)
		}
		waitRenewals(t, c, prefix, "lease", p.ID(), 1)
		if left := leaseLeft(t, c, prefix, "lease", p.ID()); left < 20*time.Second {
			t.Fatalf("lease has %v left after a renewal, want the new TTL of 30s", left)
		}
		ok(t, p.SetLeaseTTL(ctx, 200*time.Millisecond))
		if left := leaseLeft(t, c, prefix, "lease", p.ID()); left > 5*time.Second {
			t.Fatalf("lease has %v left after SetLeaseTTL(200ms)", left)
		}
		waitRenewals(t, c, prefix, "lease", p.ID(), 3) // renewed every ~67ms
		for _, bad := range []time.Duration{50 * time.Millisecond, 25 * time.Hour} {
			if err := p.SetLeaseTTL(ctx, bad); !errors.Is(err, core.ErrInvalidArgument) {
				t.Fatalf("SetLeaseTTL(%v): %v, want ErrInvalidArgument", bad, err)
			}
		}
		ok(t, p.Release(ctx))
		if err := p.SetLeaseTTL(ctx, time.Second); !errors.Is(err, core.ErrNotHeld) {
			t.Fatalf("SetLeaseTTL after Release: %v, want ErrNotHeld", err)
		}
	})
}

// TestSetLeaseTTLLostAndLeaseless: a lost lease answers ErrNotHeld; a
// permit without a lease has nothing to change; a Keyed permit changes
// its key's lease.
func TestSetLeaseTTLLostAndLeaseless(t *testing.T) {
	c, m := miniClient(t)
	ctx := context.Background()
	s := redissem.New(c, "lost", 1, redissem.WithDefaultLeaseTTL(time.Hour))
	defer s.Close()
	p := acquire(t, s)
	m.SetTime(time.Now().Add(2 * time.Hour))
	if err := p.SetLeaseTTL(ctx, time.Second); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("SetLeaseTTL of an ended lease: %v, want ErrNotHeld", err)
	}
	lostWithin(t, p, "after SetLeaseTTL found the lease ended")

	l := core.NewLocal(1)
	defer l.Close()
	lp := acquire(t, l)
	if lp.ID() != "" {
		t.Fatalf("Local permit ID %q, want empty", lp.ID())
	}
	ok(t, lp.SetLeaseTTL(ctx, time.Second))
	if err := lp.SetLeaseTTL(ctx, time.Millisecond); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("SetLeaseTTL(1ms) on a Local permit: %v, want ErrInvalidArgument", err)
	}
	ok(t, lp.Release(ctx))

	c, _ = miniClient(t)
	k := redissem.NewKeyed(c, "keyed", 1, redissem.WithDefaultLeaseTTL(300*time.Millisecond))
	defer k.Close()
	kp, err := k.Acquire(ctx, "a")
	ok(t, err)
	ok(t, kp.SetLeaseTTL(ctx, 30*time.Second))
	ids, err := c.ZRangeWithScores(ctx, "distsem:{keyed#a}:h", 0, 0).Result() // the first holder (the last member is a sentinel)
	ok(t, err)
	if len(ids) != 1 || time.Until(time.UnixMilli(int64(ids[0].Score))) < 20*time.Second {
		t.Fatalf("keyed lease %v, want one ending in about 30s", ids)
	}
	ok(t, kp.Release(ctx))
}

// TestSetLeaseTTLWhileRenewing changes the lease again and again while the
// renewal loop renews it (each change forces a renewal): under -race, a
// renewal that read the TTL unsynchronised would be reported.
func TestSetLeaseTTLWhileRenewing(t *testing.T) {
	c, _ := miniClient(t)
	// Leases of 300–450 ms, renewed every 100 ms: the 100 calls overlap
	// several renewals, and a stall under load (-race on a busy machine)
	// would have to last a whole lease to end one (100 ms leases did, about
	// once in three runs on a loaded machine).
	s := redissem.New(c, "churn", 1, redissem.WithDefaultLeaseTTL(300*time.Millisecond))
	defer s.Close()
	ctx := context.Background()
	p := acquire(t, s)
	for i := range 100 {
		ok(t, p.SetLeaseTTL(ctx, time.Duration(300+i%2*150)*time.Millisecond))
	}
	ok(t, p.Release(ctx))
	wantStats(t, s, 0, 0)
}
