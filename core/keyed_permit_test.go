package core_test

// A keyed permit of the in-process backend is the key's Local's own permit
// (no wrapper): these tests hold it to what a wrapped permit promised.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
)

// An uncontended keyed acquire + release allocates what a plain Local's
// does: its one 32-byte permit.
func TestLocalKeyedAcquireAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what escapes")
	}
	ctx := context.Background()
	for _, reentrant := range []bool{false, true} {
		k := core.NewLocalKeyed(4)
		var ks core.KeyedSemaphore = k
		want := 1.0 // the permit
		if reentrant {
			ks, want = core.ReentrantKeyed(k), 3 // and the wrapper's permit and owner
		}
		for name, f := range map[string]func(){
			"Acquire": func() {
				p, _ := ks.Acquire(ctx, "GET /work")
				_ = p.Release(ctx)
			},
			"TryAcquire": func() {
				p, _ := ks.TryAcquire(ctx, "GET /work")
				_ = p.Release(ctx)
			},
		} {
			if n := testing.AllocsPerRun(100, f); n != want {
				t.Errorf("reentrant %v: keyed %s + Release: %.0f allocations, want %.0f", reentrant, name, n, want)
			}
		}
		ok(t, k.Close())
	}
}

// The permit keeps every guarantee of a Keyed permit: only the first
// Release counts (once for the key's semaphore, once for the key's
// reference: the key then becomes idle and can be evicted), tokens keep
// increasing across eviction, and it has no lease, id or grant time.
func TestLocalKeyedPermit(t *testing.T) {
	ctx := context.Background()
	k := core.NewLocalKeyed(2, core.WithMaxIdleKeys(1))
	defer k.Close()
	p, err := k.Acquire(ctx, "a")
	ok(t, err)
	q, err := k.Acquire(ctx, "a")
	ok(t, err)
	if p.Lost() != nil || p.ID() != "" || !p.GrantedAt().IsZero() || p.Weight() != 1 {
		t.Fatalf("keyed Local permit: Lost %v, ID %q, GrantedAt %v, Weight %d", p.Lost(), p.ID(), p.GrantedAt(), p.Weight())
	}
	if q.Token() <= p.Token() {
		t.Fatalf("tokens %d then %d", p.Token(), q.Token())
	}
	ok(t, p.SetLeaseTTL(ctx, time.Hour))
	ok(t, p.Release(ctx))
	ok(t, p.Release(ctx)) // a second Release does nothing...
	if st, err := k.Stats(ctx, "a"); err != nil || st.InUse != 1 {
		t.Fatalf("after p's double Release: %+v, %v; want 1 in use", st, err)
	}
	// ...and does not unref the key a second time: "a" is still busy, so
	// filling the idle list with other keys cannot evict it.
	for i := range 3 {
		r, err := k.TryAcquire(ctx, fmt.Sprint("other", i))
		ok(t, err)
		ok(t, r.Release(ctx))
	}
	if st, err := k.Stats(ctx, "a"); err != nil || st.InUse != 1 {
		t.Fatalf("busy key evicted: %+v, %v; want 1 in use", st, err)
	}
	if _, err := k.TryAcquire(ctx, "a", core.WithWeight(2)); !errors.Is(err, core.ErrNoPermit) {
		t.Fatalf("weight 2 with 1 of 2 held: %v, want ErrNoPermit", err)
	}
	last := q.Token()
	ok(t, q.Release(ctx))
	if n := k.Len(); n != 1 {
		t.Fatalf("Len = %d with one idle key allowed and none busy", n)
	}
	// "a" is the one idle key now (it evicted "other2"); another key
	// evicts it, and its new semaphore keeps the tokens increasing.
	r, err := k.TryAcquire(ctx, "b")
	ok(t, err)
	ok(t, r.Release(ctx))
	a, err := k.TryAcquire(ctx, "a", core.WithWeight(2))
	ok(t, err)
	if a.Token() <= last {
		t.Fatalf("token %d after eviction, %d before", a.Token(), last)
	}
	ok(t, a.Release(ctx))
}

// A nested keyed acquire matches the held permit to its key and wrapper:
// the same key nests, another key of the same wrapper and the same key of
// another Keyed or another wrapper do not.
func TestLocalKeyedReentrantMatchesItsKey(t *testing.T) {
	ctx := context.Background()
	base := core.NewLocalKeyed(1)
	defer base.Close()
	k := core.ReentrantKeyed(base)
	base2 := core.NewLocalKeyed(1)
	defer base2.Close()
	k2 := core.ReentrantKeyed(base2)
	p, err := k.Acquire(ctx, "a")
	ok(t, err)
	held := core.ContextWithPermit(ctx, p)
	n, err := k.TryAcquire(held, "a")
	ok(t, err)
	if n == p || n.Token() != p.Token() {
		t.Fatalf("nested permit %p (token %d) for %p (token %d)", n, n.Token(), p, p.Token())
	}
	ok(t, n.Release(ctx))
	if _, err := k.TryAcquire(ctx, "a"); !errors.Is(err, core.ErrNoPermit) {
		t.Fatalf("the nested Release returned the permit: %v", err)
	}
	for name, acq := range map[string]func() (*core.Permit, error){
		"another key":   func() (*core.Permit, error) { return k.TryAcquire(held, "b") },
		"another Keyed": func() (*core.Permit, error) { return k2.TryAcquire(held, "a") },
		"another wrapper": func() (*core.Permit, error) {
			q, err := core.ReentrantKeyed(base2).TryAcquire(held, "a")
			if err == nil {
				_ = q.Release(ctx) // so that the next case finds "a" of base2 free
			}
			return q, err
		},
	} {
		q, err := acq()
		ok(t, err)
		if q.Token() == p.Token() {
			t.Fatalf("%s nested in the held permit", name)
		}
		ok(t, q.Release(ctx))
	}
	ok(t, p.Release(ctx))
	q, err := k.TryAcquire(held, "a") // released: acquires for real
	ok(t, err)
	if q.Token() <= p.Token() {
		t.Fatalf("token %d after the held permit's release (%d)", q.Token(), p.Token())
	}
	ok(t, q.Release(ctx))
}
