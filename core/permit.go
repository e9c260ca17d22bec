package core

import (
	"context"
	"sync/atomic"
	"time"
)

// Semaphore hands out permits. Every backend implements it: core.Local,
// and the Redis and Consul semaphores of core/redissem and core/consul.
type Semaphore interface {
	// Acquire blocks until a permit of the requested weight is granted in
	// FIFO order, ctx ends, or the backend fails. On success it returns a
	// held *Permit. On failure it returns a nil permit and an error, and the
	// semaphore is left as if Acquire had never been called.
	Acquire(ctx context.Context, opts ...AcquireOption) (*Permit, error)
	// TryAcquire never waits. It grants a permit only if the weight fits
	// and nobody is queued; otherwise it returns an error matching
	// ErrNoPermit.
	TryAcquire(ctx context.Context, opts ...AcquireOption) (*Permit, error)
}

// Stats is a snapshot of a semaphore's state.
type Stats struct {
	Limit   int64 // the limit in force
	InUse   int64 // the sum of the weights of the permits held
	Waiting int64 // the number of queued Acquire calls
	// Levels holds each priority level's share of InUse and Waiting,
	// level 0 first, for a backend with flows (see Fairness); zero
	// otherwise.
	Levels [MaxLevels]LevelStats
	// Backlogged is the number of flow queues with waiters, for a
	// backend with flows; zero otherwise.
	Backlogged int64
}

// releaser is the backend that owns a permit.
type releaser interface {
	release(ctx context.Context, p *Permit) error
}

// Permit is a held share of a semaphore, returned by Acquire and
// TryAcquire. It is safe for concurrent use.
type Permit struct {
	// What only some permits need is behind permitExt: a permit of a
	// backend without per-permit state (Local, a Local key of
	// NewLocalKeyed, fail-open) shares its backend's; one with a lease, or
	// that wraps another, has its own, allocated with it.
	*permitExt // never nil
	weight     int64
	token      int64
	released   atomic.Bool
}

type permitExt struct {
	owner   releaser      // nil for a permit of a backend outside this package: see ext
	ext     extReleaser   // a backend's outside this package (backend.NewPermit); nil for this package's permits
	lost    chan struct{} // nil: the lease can never be lost
	inner   *Permit       // the wrapped permit: a Redis key's (Keyed), the held one (nested), the local share's (leased)
	id      string        // the backend's handle (backend.Grant.ID); empty for Local
	grantUS int64         // the backend's time of the grant, microseconds; 0 if unknown
}

// newPermit returns a permit with its own x, in one allocation.
func newPermit(x permitExt, weight, token int64) *Permit {
	c := &struct {
		p Permit
		x permitExt
	}{x: x}
	c.p.permitExt, c.p.weight, c.p.token = &c.x, weight, token
	return &c.p
}

// Weight returns the number of permits held.
func (p *Permit) Weight() int64 { return p.weight }

// Token returns the fencing token of this grant. Tokens strictly increase
// with every grant of the same semaphore, across all processes sharing it,
// so a resource guarded by the semaphore can reject a writer whose token is
// older than one it has already seen. A permit granted by a fail-open or
// local fallback policy has token 0. In the leased mode (core/redissem's Leased)
// tokens increase only within a process: see the package documentation.
func (p *Permit) Token() int64 { return p.token }

// GrantedAt returns the Redis server time at which the permit was granted,
// or the zero time for a permit of the in-process backend or a fallback.
func (p *Permit) GrantedAt() time.Time {
	if p.permitExt == nil || p.grantUS == 0 { // nil: a zero Permit
		return time.Time{}
	}
	return time.UnixMicro(p.grantUS)
}

// Lost returns a channel that is closed when the lease could not be kept:
// renewal failed for longer than the lease TTL, the backend reported the
// lease gone, or the semaphore was closed while the permit was held. A
// permit without a lease (from the in-process backend, or granted by a
// fail-open or fail-local policy) returns a nil channel: it is never lost,
// and its Release does no I/O.
func (p *Permit) Lost() <-chan struct{} {
	if p.permitExt == nil { // a zero Permit
		return nil
	}
	return p.lost
}

// Release gives the permit back. Only the first call does anything; later
// calls return nil. The first call returns ErrNotHeld (wrapped) if the lease
// had already expired, or an ErrUnavailable error if the backend could not be
// reached; in both cases the permit no longer counts for this process and
// the backend reclaims it when its lease ends. If ctx is already done,
// Release still makes its backend round trip, bounded by the lease TTL,
// because a request ctx is often cancelled by the time its permit is given
// back; otherwise ctx bounds the round trip. A nil ctx is taken as
// context.Background(): the round trip is then bounded by the lease TTL.
func (p *Permit) Release(ctx context.Context) error {
	if p == nil || !p.released.CompareAndSwap(false, true) {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if p.ext != nil {
		return p.ext.ReleasePermit(ctx, p)
	}
	return p.owner.release(ctx, p)
}

// ReleaseDetached is Release for a ctx that may already be cancelled, such
// as a request's at the end of a handler or database/sql's in RowsClose: the
// backend round trip ignores ctx's cancellation and is bounded by timeout
// instead. A permit without a lease (in-process, or from a fail-open or
// fail-local policy) does no I/O, and this costs nothing extra. A nil ctx
// is taken as context.Background().
func (p *Permit) ReleaseDetached(ctx context.Context, timeout time.Duration) error {
	if p == nil || p.Lost() == nil {
		return p.Release(ctx)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	return p.Release(ctx)
}

// Released reports whether Release has been called.
func (p *Permit) Released() bool { return p.released.Load() }

// nopOwner backs permits granted without a backend (fail open).
type nopOwner struct{}

func (nopOwner) release(context.Context, *Permit) error { return nil }
