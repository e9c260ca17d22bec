package core

import "context"

// Reentrant permits. Redisson counts the re-entries of a lock per thread;
// Go has no thread identity, so the permit travels in the ctx instead:
//
//	sem := core.Reentrant(backend)
//	p, err := sem.Acquire(ctx)
//	...
//	ctx = core.ContextWithPermit(ctx, p)
//	helper(ctx) // calls sem.Acquire(ctx) again: nested, does not wait
//
// The adapters (httpmw, grpcmw, echomw through core/admit) put their
// permit into the request ctx, so a handler limited by the middleware can
// call code that acquires the same semaphore, when both use the same
// reentrant wrapper.

// Reentrant returns a semaphore that acquires from s, except that Acquire
// and TryAcquire return a nested permit at once, without waiting or any
// backend round trip, when ctx already holds a permit of the returned
// semaphore (put there by ContextWithPermit). It works the same over every
// backend.
//
// A nested permit shares the held permit's lease, token, ID, GrantedAt and
// Lost channel, and its Release does nothing: only the outermost Release
// (of the permit that Acquire granted for real) returns the permit. A
// nested request heavier than the held permit fails with an
// ErrInvalidArgument error, and WithLeaseTTL is not applied (the lease is
// the held permit's); a held permit that was released or lost is skipped
// and the call acquires from s.
//
// Reentry follows the ctx, not the goroutine: goroutines that share a ctx
// holding a permit all enter under that one permit and are not limited
// against each other. Give a goroutine that must count on its own a ctx
// from WithoutPermits.
//
// A permit nests only in permits of the same wrapper: wrap s once, and
// give that wrapper to every caller and adapter that should nest. Without
// it, a second Acquire in the same ctx waits like any other, and at limit
// 1 waits for itself until ctx ends. Each outermost permit costs one
// allocation more than s's own. Manage s itself (SetLimit, Stats, Close)
// as before.
func Reentrant(s Semaphore) Semaphore {
	if s == nil {
		panic("core: Reentrant expects a non-nil Semaphore")
	}
	return &reentrant{s: s}
}

// ReentrantKeyed is Reentrant for a keyed semaphore: a permit nests only in
// a held permit of the same key, acquired through the same wrapper.
func ReentrantKeyed(k KeyedSemaphore) KeyedSemaphore {
	if k == nil {
		panic("core: ReentrantKeyed expects a non-nil KeyedSemaphore")
	}
	return &reentrantKeyed{k: k}
}

type reentrant struct{ s Semaphore }

func (r *reentrant) Acquire(ctx context.Context, opts ...AcquireOption) (*Permit, error) {
	return r.acquire(ctx, opts, r.s.Acquire)
}

func (r *reentrant) TryAcquire(ctx context.Context, opts ...AcquireOption) (*Permit, error) {
	return r.acquire(ctx, opts, r.s.TryAcquire)
}

func (r *reentrant) acquire(ctx context.Context, opts []AcquireOption, get func(context.Context, ...AcquireOption) (*Permit, error)) (*Permit, error) {
	if p, ok, err := reenter(ctx, opts, func(o releaser) bool { return o == r }); ok {
		return p, err
	}
	p, err := get(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return wrapPermit(r, p), nil
}

// release gives back the permit that p wraps.
func (r *reentrant) release(ctx context.Context, p *Permit) error { return p.inner.Release(ctx) }

type reentrantKeyed struct{ k KeyedSemaphore }

// keyedNest owns the outermost permits of one key of a reentrantKeyed.
type keyedNest struct {
	r   *reentrantKeyed
	key string
}

func (n *keyedNest) release(ctx context.Context, p *Permit) error { return p.inner.Release(ctx) }

func (r *reentrantKeyed) Acquire(ctx context.Context, key string, opts ...AcquireOption) (*Permit, error) {
	return r.acquire(ctx, key, opts, r.k.Acquire)
}

func (r *reentrantKeyed) TryAcquire(ctx context.Context, key string, opts ...AcquireOption) (*Permit, error) {
	return r.acquire(ctx, key, opts, r.k.TryAcquire)
}

func (r *reentrantKeyed) acquire(ctx context.Context, key string, opts []AcquireOption,
	get func(context.Context, string, ...AcquireOption) (*Permit, error)) (*Permit, error) {
	if p, ok, err := reenter(ctx, opts, func(o releaser) bool {
		n, ok := o.(*keyedNest)
		return ok && n.r == r && n.key == key
	}); ok {
		return p, err
	}
	p, err := get(ctx, key, opts...)
	if err != nil {
		return nil, err
	}
	return wrapPermit(&keyedNest{r: r, key: key}, p), nil
}

// wrapPermit returns a permit owned by o around p: it shares p's weight,
// token, lease and Lost channel, and o's release gives p back.
func wrapPermit(o releaser, p *Permit) *Permit {
	return newPermit(permitExt{owner: o, lost: p.lost, inner: p, grantUS: p.grantUS}, p.weight, p.token)
}

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
// of a Reentrant semaphore that granted p, with that ctx (or one derived
// from it), nests inside p. A nested permit stands for its outermost
// permit. A nil p returns ctx unchanged.
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

// reenter returns a nested permit when ctx holds a live permit whose owner
// satisfies same. ok reports whether the call was answered (with a permit
// or an error); if not, the caller acquires.
func reenter(ctx context.Context, opts []AcquireOption, same func(releaser) bool) (p *Permit, ok bool, err error) {
	for h := held(ctx); h != nil && h.p != nil; h = h.next {
		held := h.p
		if !same(held.owner) || held.Released() || isClosed(held.lost) {
			continue
		}
		// Checked as the backend would: a nested acquire never reaches it.
		a, err := buildAcquire(minLeaseTTL, opts)
		if err != nil {
			return nil, true, err
		}
		weight := a.weight
		if ctx.Err() != nil {
			return nil, true, ctxError(ctx, "nested")
		}
		if weight > held.weight {
			return nil, true, invalid("nested acquire of weight %d exceeds the weight %d held in ctx", weight, held.weight)
		}
		return newPermit(permitExt{owner: nestedOwner{}, inner: held, lost: held.lost, grantUS: held.grantUS}, weight, held.token), true, nil
	}
	return nil, false, nil
}

// isClosed reports whether c is closed; a nil c never is.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
