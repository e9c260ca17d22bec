package backend

import (
	"context"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/bridge"
)

// Releaser gives back the permits of a backend.
type Releaser interface {
	// ReleasePermit returns p to its semaphore. Permit.Release calls it at
	// most once per permit, with the ctx given to Release, and returns its
	// error: an error matching core.ErrNotHeld if the lease had already
	// ended, or core.ErrUnavailable if the backend could not be reached.
	ReleasePermit(ctx context.Context, p *core.Permit) error
}

// LeaseSetter is a Releaser whose permits' lease can change. Permit's
// SetLeaseTTL calls SetPermitLease after it checked ttl (in [100ms, 24h])
// and that p is held and has a lease, and returns its error: an error
// matching core.ErrNotHeld if the lease had already ended,
// core.ErrUnavailable if the backend could not be reached. A backend whose
// Releaser is not a LeaseSetter refuses SetLeaseTTL with a
// core.ErrInvalidArgument error.
type LeaseSetter interface {
	Releaser
	SetPermitLease(ctx context.Context, p *core.Permit, ttl time.Duration) error
}

// Grant describes a permit that a backend granted.
type Grant struct {
	Weight    int64     // the permits held, > 0
	Token     int64     // the fencing token; see Permit.Token
	GrantedAt time.Time // the backend's time of the grant; zero if unknown
	// Lost is closed by the backend when the lease cannot be kept; nil if
	// the permit can never be lost. The backend owns it and closes it at
	// most once.
	Lost chan struct{}
	// ID is the permit's handle in the backend, returned by Permit.ID;
	// empty if it has none.
	ID string
}

var (
	newPermit = bridge.NewPermit.(func(interface {
		ReleasePermit(context.Context, *core.Permit) error
	}, int64, int64, time.Time, chan struct{}, string) *core.Permit)
	wrapPermit = bridge.WrapPermit.(func(*core.Permit, interface {
		ReleasePermit(context.Context, *core.Permit) error
	}) *core.Permit)
)

// NewPermit returns a held permit of g, released through r. A nil r makes a
// permit whose Release does nothing, as for a fail-open grant.
func NewPermit(r Releaser, g Grant) *core.Permit {
	return newPermit(r, g.Weight, g.Token, g.GrantedAt, g.Lost, g.ID)
}

// WrapPermit returns a permit that stands for inner, for a semaphore that
// wraps another one (a limiter that watches its permits): it has inner's
// weight, token, grant time, ID and Lost channel, and SetLeaseTTL changes
// inner's lease. Its Release calls r.ReleasePermit once, with the permit
// returned here; r must release inner (inner.Release, with the ctx it was
// given). WrapPermit panics if inner is not a held permit or r is nil.
//
// A permit made by NewPermit owns a Lost channel of its own, so a wrapper
// built with it would have to watch inner's channel with a goroutine per
// permit; WrapPermit shares it instead.
func WrapPermit(inner *core.Permit, r Releaser) *core.Permit {
	if inner == nil || inner.Weight() == 0 || r == nil {
		panic("backend: WrapPermit expects a held permit and a non-nil Releaser")
	}
	return wrapPermit(inner, r)
}
