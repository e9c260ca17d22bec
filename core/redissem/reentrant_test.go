package redissem_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/semtest"
)

// reentrantSems lists one semaphore per backend, seen through the
// Semaphore interface plus Stats. Keyed semaphores are seen on one key.
func reentrantSems() map[string]func(t *testing.T, limit int64, opts ...opt) sem {
	m := map[string]func(*testing.T, int64, ...opt) sem{}
	for _, b := range backends() {
		m[b.name] = b.new
	}
	for name, newKeyed := range keyedBackends() {
		m["keyed-"+name] = func(t *testing.T, limit int64, opts ...opt) sem {
			k := newKeyed(t, limit, opts...)
			t.Cleanup(func() { _ = k.Close() })
			return semtest.OneKey(k, "/route")
		}
	}
	return m
}

// reentrantSem is a semaphore acquired through core.Reentrant and managed
// (Stats, SetLimit, Close) through the semaphore it wraps.
type reentrantSem struct {
	core.Semaphore
	sem
}

func (r reentrantSem) Acquire(ctx context.Context, o ...core.AcquireOption) (*core.Permit, error) {
	return r.Semaphore.Acquire(ctx, o...)
}

func (r reentrantSem) TryAcquire(ctx context.Context, o ...core.AcquireOption) (*core.Permit, error) {
	return r.Semaphore.TryAcquire(ctx, o...)
}

// reent marks a semaphore of forEachReentrant's newSem as reentrant.
const reent = true

// forEachReentrant runs f on every backend; newSem(limit, true) returns a
// semaphore wrapped by core.Reentrant, newSem(limit, false) the plain one.
func forEachReentrant(t *testing.T, f func(t *testing.T, newSem func(limit int64, reentrant bool) sem)) {
	for name, mk := range reentrantSems() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, func(limit int64, reentrant bool) sem {
				s := mk(t, limit)
				if !reentrant {
					return s
				}
				return reentrantSem{core.Reentrant(s), s}
			})
		})
	}
}

// generous bounds a wait that must not happen: a deadlock shows up as
// ErrNoPermit after it, never as a hang.
const generous = 10 * time.Second

func TestReentrantNestedAcquireDoesNotDeadlock(t *testing.T) {
	forEachReentrant(t, func(t *testing.T, newSem func(int64, bool) sem) {
		s := newSem(1, reent)
		outer := acquire(t, s)
		ctx, cancel := context.WithTimeout(core.ContextWithPermit(context.Background(), outer), generous)
		defer cancel()
		inner, err := s.Acquire(ctx)
		ok(t, err)
		if inner.Token() != outer.Token() || inner.Lost() != outer.Lost() || !inner.GrantedAt().Equal(outer.GrantedAt()) {
			t.Fatalf("inner permit (token %d) does not share the outer one's (token %d) lease", inner.Token(), outer.Token())
		}
		// A nested TryAcquire nests too, and so does a third level.
		deeper, err := s.TryAcquire(core.ContextWithPermit(ctx, inner))
		ok(t, err)
		if core.PermitFromContext(core.ContextWithPermit(ctx, deeper)) != outer {
			t.Fatal("a nested permit put into a ctx does not stand for its outermost permit")
		}
		wantStats(t, s, 1, 0)
		ok(t, deeper.Release(ctx))
		ok(t, inner.Release(ctx))
		// An inner Release does not free the permit.
		wantStats(t, s, 1, 0)
		if _, err := s.TryAcquire(context.Background()); !errors.Is(err, core.ErrNoPermit) {
			t.Fatalf("after the inner Release a fresh TryAcquire got %v, want ErrNoPermit", err)
		}
		// Only the outermost Release returns it.
		ok(t, outer.Release(ctx))
		wantStats(t, s, 0, 0)
		// A ctx whose permit was released acquires normally.
		again, err := s.Acquire(ctx)
		ok(t, err)
		if again.Token() <= outer.Token() {
			t.Fatalf("acquire after the outer release reused token %d (outer %d)", again.Token(), outer.Token())
		}
		wantStats(t, s, 1, 0)
		ok(t, again.Release(ctx))
	})
}

func TestReentrantNeedsAHolderCtx(t *testing.T) {
	forEachReentrant(t, func(t *testing.T, newSem func(int64, bool) sem) {
		bg := context.Background()
		s := newSem(1, reent)
		other := newSem(1, reent) // a different semaphore
		plain := newSem(1, false) // not reentrant
		p := acquire(t, s)
		q := acquire(t, plain)
		holder := core.ContextWithPermit(core.ContextWithPermit(bg, p), q)
		for name, ctx := range map[string]context.Context{
			"a ctx that did not come from a holder": bg,
			"WithoutPermits of the holder's ctx":    core.WithoutPermits(holder),
		} {
			if _, err := s.TryAcquire(ctx); !errors.Is(err, core.ErrNoPermit) {
				t.Fatalf("%s inherited the permit: %v", name, err)
			}
		}
		if _, err := plain.TryAcquire(holder); !errors.Is(err, core.ErrNoPermit) {
			t.Fatalf("a semaphore without Reentrant nested: %v", err)
		}
		// The holder's ctx holds nothing of another semaphore.
		o := tryAcquire(t, other)
		wantStats(t, other, 1, 0)
		ok(t, o.Release(bg))
		// A nested request heavier than the held permit is refused.
		if _, err := s.Acquire(holder, core.WithWeight(2)); !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("nested weight 2 in a permit of weight 1: %v, want ErrInvalidArgument", err)
		}
		// A done ctx fails as on any Acquire.
		done, cancel := context.WithCancel(holder)
		cancel()
		if _, err := s.Acquire(done); !errors.Is(err, context.Canceled) {
			t.Fatalf("nested Acquire with a cancelled ctx: %v, want context.Canceled", err)
		}
		ok(t, p.Release(bg))
		ok(t, q.Release(bg))
		wantStats(t, s, 0, 0)
	})
}

// TestReentrantSharedCtx checks what the documentation says of goroutines
// sharing a holder's ctx: they all enter under its one permit at once, and
// the permit is returned by the outermost Release only; a goroutine given
// WithoutPermits counts on its own and waits.
func TestReentrantSharedCtx(t *testing.T) {
	forEachReentrant(t, func(t *testing.T, newSem func(int64, bool) sem) {
		bg := context.Background()
		s := newSem(1, reent)
		outer := acquire(t, s)
		ctx := core.ContextWithPermit(bg, outer)
		const n = 8
		inside := make(chan *core.Permit, n)
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				wctx, cancel := context.WithTimeout(ctx, generous)
				defer cancel()
				p, err := s.Acquire(wctx)
				if err != nil {
					t.Error(err)
					return
				}
				inside <- p
			})
		}
		wg.Wait() // all n are inside together: none waited for another
		close(inside)
		for p := range inside {
			if p.Token() != outer.Token() {
				t.Fatalf("nested token %d, outer %d", p.Token(), outer.Token())
			}
			ok(t, p.Release(bg))
		}
		wantStats(t, s, 1, 0)

		own := make(chan *core.Permit, 1)
		go func() {
			p, err := s.Acquire(core.WithoutPermits(ctx))
			if err != nil {
				t.Error(err)
			}
			own <- p
		}()
		waitQueued(t, s, 1)
		ok(t, outer.Release(bg))
		p := <-own
		if p == nil || p.Token() <= outer.Token() {
			t.Fatalf("the WithoutPermits goroutine got %v", p)
		}
		ok(t, p.Release(bg))
		wantStats(t, s, 0, 0)
	})
}
