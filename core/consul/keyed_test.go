package consul_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/consul"
	"github.com/distsem/distsem/core/semtest"
)

func newKeyed(t *testing.T, def int64, opts ...core.Option) *core.Keyed {
	t.Helper()
	opts = append([]core.Option{core.WithKeyPrefix(uniquePrefix())}, opts...)
	k := consul.NewKeyed(newClient(t), "routes", def, opts...)
	t.Cleanup(func() { _ = k.Close() })
	return k
}

// TestKeyedConformance runs core's conformance suite on one key of a keyed
// Consul semaphore whose key holds '/' and so is stored hashed.
func TestKeyedConformance(t *testing.T) {
	semtest.Run(t, semtest.Backend{Name: "consul-keyed", New: func(t *testing.T, limit int64) semtest.Sem {
		return semtest.OneKey(newKeyed(t, limit), "GET /reports")
	}})
}

// Keys are separate semaphores: a key's limit (default or WithLimits)
// admits its own holders only, and keys that would nest as Consul paths
// ("a" and "a/b") or that hold hostile characters never share one.
func TestKeyedKeysAreSeparate(t *testing.T) {
	ctx, cancel := context.WithTimeout(background(), 30*time.Second)
	defer cancel()
	k := newKeyed(t, 1, core.WithLimits(map[string]int64{"wide": 2}))
	var held []*core.Permit
	for _, key := range []string{"a", "a/b", "a#b", "{x} y", strings.Repeat("z", 300), "wide", "wide"} {
		p, err := k.TryAcquire(ctx, key)
		if err != nil {
			t.Fatalf("key %q: %v (another key's holder counted against it)", key, err)
		}
		held = append(held, p)
	}
	for _, key := range []string{"a", "a/b", "wide"} {
		if _, err := k.TryAcquire(ctx, key); !errors.Is(err, core.ErrNoPermit) {
			t.Fatalf("key %q admitted more than its limit: %v", key, err)
		}
	}
	for _, p := range held {
		ok(t, p.Release(ctx))
	}
	if st, err := k.Stats(ctx, "wide"); err != nil || st.Limit != 2 || st.InUse != 0 {
		t.Fatalf("Stats of \"wide\" = %+v, %v; want limit 2, nothing in use", st, err)
	}
}

// An evicted idle key's semaphore is closed (its session destroyed), and
// the key works again on its next use.
func TestKeyedEvictionClosesIdleKeys(t *testing.T) {
	ctx, cancel := context.WithTimeout(background(), 30*time.Second)
	defer cancel()
	k := newKeyed(t, 1, core.WithMaxIdleKeys(0))
	for range 3 {
		p, err := k.Acquire(ctx, "job")
		ok(t, err)
		ok(t, p.Release(ctx))
		if n := k.Len(); n != 0 {
			t.Fatalf("%d keys kept with WithMaxIdleKeys(0)", n)
		}
	}
	ok(t, k.Close()) // waits for the evicted semaphores' Close
	if _, err := k.Acquire(ctx, "job"); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("Acquire after Close: %v, want ErrClosed", err)
	}
}

// Reentrancy works on Consul through core's wrappers, plain and keyed.
func TestReentrantOnConsul(t *testing.T) {
	ctx, cancel := context.WithTimeout(background(), 30*time.Second)
	defer cancel()
	base := newSem(t, 1)
	sem := core.Reentrant(base)
	p, err := sem.Acquire(ctx)
	ok(t, err)
	n, err := sem.Acquire(core.ContextWithPermit(ctx, p)) // limit 1: would wait for itself
	ok(t, err)
	if n.Token() != p.Token() || n.Lost() != p.Lost() {
		t.Fatalf("nested permit token %d, outer %d", n.Token(), p.Token())
	}
	ok(t, n.Release(ctx))
	if st, _ := base.Stats(ctx); st.InUse != 1 {
		t.Fatalf("in use after the nested release: %d, want 1", st.InUse)
	}
	ok(t, p.Release(ctx))

	k := core.ReentrantKeyed(newKeyed(t, 1))
	q, err := k.Acquire(ctx, "a")
	ok(t, err)
	m, err := k.TryAcquire(core.ContextWithPermit(ctx, q), "a")
	ok(t, err)
	ok(t, m.Release(ctx))
	ok(t, q.Release(ctx))
}

// Options that a Consul semaphore cannot honour are refused: keyed options
// by New, and a per-call lease TTL (all permits share the session).
func TestRefusesWhatItCannotHonour(t *testing.T) {
	c := newClient(t) // skips, outside the recover below, without an agent
	func() {
		defer func() {
			if msg, _ := recover().(string); !strings.Contains(msg, "WithLimits") {
				t.Fatalf("New with WithLimits: panic %q, want one naming WithLimits", msg)
			}
		}()
		consul.New(c, "x", 1, core.WithLimits(map[string]int64{"a": 1}))
	}()
	s := newSem(t, 1)
	if _, err := s.TryAcquire(background(), core.WithLeaseTTL(time.Minute)); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("TryAcquire WithLeaseTTL: %v, want ErrInvalidArgument", err)
	}
}
