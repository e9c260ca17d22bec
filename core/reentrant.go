package core

import (
	"context"
	"sync/atomic"
)

// Reentrant permits. Redisson counts the re-entries of a lock per thread;
// Go has no thread identity, so the permit travels in the ctx instead:
//
//	p, err := sem.Acquire(ctx) // sem built WithReentrant
//	...
//	ctx = core.ContextWithPermit(ctx, p)
//	helper(ctx) // calls sem.Acquire(ctx) again: nested, does not wait
//
// The adapters (httpmw, grpcmw, echomw through core/admit) put their
// permit into the request ctx, so a handler limited by the middleware can
// call code that acquires the same semaphore.

// WithReentrant makes Acquire and TryAcquire of the semaphore return a
// nested permit at once, without waiting or any backend round trip, when
// ctx already holds one of its permits (put there by ContextWithPermit).
// A nested permit shares the held permit's lease, token, GrantedAt and
// Lost channel, and its Release does nothing: only the outermost Release
// (of the permit that Acquire granted for real) returns the permit. A
// nested request heavier than the held permit fails with an
// ErrInvalidArgument error, and WithLeaseTTL is ignored (the lease is the
// held permit's); a held permit that was released or lost is ignored and
// the call acquires normally.
//
// Reentry follows the ctx, not the goroutine: goroutines that share a ctx
// holding a permit all enter under that one permit and are not limited
// against each other. Give a goroutine that must count on its own a ctx
// from WithoutPermits.
//
// The default is off: a second Acquire in the same ctx waits like any
// other, and at limit 1 waits for itself forever (until ctx ends).
func WithReentrant() Option { return func(c *config) { c.reentrant = true } }

type permitsKey struct{}

// permitCtx is a ctx that holds a permit: one allocation per
// ContextWithPermit. Its permits form an immutable list, innermost first,
// so a ctx can hold permits of several semaphores.
type permitCtx struct {
	context.Context
	p    *Permit // an outermost permit (never a nested one); nil: a barrier
	next *permitCtx
}

func (c *permitCtx) Value(key any) any {
	if key == (permitsKey{}) {
		return c
	}
	return c.Context.Value(key)
}

func held(ctx context.Context) *permitCtx {
	h, _ := ctx.Value(permitsKey{}).(*permitCtx)
	return h
}

// ContextWithPermit returns a copy of ctx that holds p, so that an Acquire
// of p's semaphore built WithReentrant with that ctx (or one derived from
// it) nests inside p. A nested permit stands for its outermost permit. A nil
// p returns ctx unchanged.
func ContextWithPermit(ctx context.Context, p *Permit) context.Context {
	if p == nil {
		return ctx
	}
	return &permitCtx{Context: ctx, p: outermost(p), next: held(ctx)}
}

// PermitFromContext returns the permit most recently put into ctx by
// ContextWithPermit (for a nested permit, its outermost one), or nil if ctx
// holds none. The permit may have been released since.
func PermitFromContext(ctx context.Context) *Permit {
	if h := held(ctx); h != nil {
		return h.p
	}
	return nil
}

// WithoutPermits returns a copy of ctx that holds no permit, for a
// goroutine that must acquire on its own although its parent holds a
// permit of the same semaphore. ctx's values, deadline and cancellation are
// kept.
func WithoutPermits(ctx context.Context) context.Context {
	if held(ctx) == nil {
		return ctx
	}
	return &permitCtx{Context: ctx}
}

// nestedOwner backs nested permits: their Release does nothing.
type nestedOwner struct{}

func (nestedOwner) release(context.Context, *Permit) error { return nil }

func outermost(p *Permit) *Permit {
	for p.inner != nil {
		if _, ok := p.owner.(nestedOwner); !ok {
			break
		}
		p = p.inner
	}
	return p
}

// reenter returns a nested permit when on is set and ctx holds a live
// permit whose owner satisfies same. ok reports whether the call was
// answered (with a permit or an error); if not, the caller acquires.
func reenter(ctx context.Context, on bool, name string, weight int64, same func(releaser) bool) (p *Permit, ok bool, err error) {
	if !on {
		return nil, false, nil
	}
	for h := held(ctx); h != nil && h.p != nil; h = h.next {
		held := h.p
		if !same(held.owner) || held.Released() || isClosed(held.lost) {
			continue
		}
		if ctx.Err() != nil {
			return nil, true, ctxError(ctx, name)
		}
		if weight <= 0 {
			return nil, true, invalid("weight %d must be positive", weight)
		}
		if weight > held.weight {
			return nil, true, invalid("nested acquire of weight %d exceeds the weight %d held in ctx for %q", weight, held.weight, name)
		}
		return newPermit(permitExt{owner: nestedOwner{}, inner: held, id: held.id,
			ttl: atomic.LoadInt64(&held.ttl), lost: held.lost, grantUS: held.grantUS}, weight, held.token), true, nil
	}
	return nil, false, nil
}

func isClosed(c <-chan struct{}) bool {
	if c == nil {
		return false
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// owns reports whether o is s or its fail-local fallback.
func (s *Redis) owns(o releaser) bool {
	return o == s || (s.fallback != nil && o == s.fallback)
}

// nestedWeight is the weight opts ask for (1 if they do not say). A nil
// option is an ErrInvalidArgument error here, since a nested acquire never
// reaches the backend's own check; other bad values are refused by reenter
// or by the backend. With no options it allocates nothing; with some, the
// config escapes to them (24 bytes).
func nestedWeight(opts []AcquireOption) (int64, error) {
	if len(opts) == 0 {
		return 1, nil
	}
	a := acquireConfig{weight: 1}
	for _, o := range opts {
		if o == nil {
			return 0, invalid("nil AcquireOption")
		}
		o(&a)
	}
	return a.weight, nil
}
