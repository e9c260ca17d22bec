package core

import (
	"context"
	"fmt"
	"time"
)

// maxLeaseTTL bounds SetLeaseTTL: a holder that dies keeps its permit for
// one lease, so a day is the longest a crash may cost.
const maxLeaseTTL = 24 * time.Hour

// ID returns the permit's id in its backend: an opaque string, safe to pass
// to another process, which can then take over the permit's lease (the
// Redis semaphore's Adopt; Keyed.Adopt with its key) or give it back
// (ReleaseID). It is empty for a permit without a backend handle: Local's,
// a fail-open or fail-local fallback's, a quorum's. A nested permit
// (Reentrant) has the id of the permit it is nested in. The id stays the
// same for the permit's life; Adopt returns a permit with a new id.
func (p *Permit) ID() string {
	if p == nil || p.permitExt == nil { // a zero Permit
		return ""
	}
	for p.id == "" && p.inner != nil {
		p = p.inner // a Keyed or nested permit: the permit it stands for
	}
	return p.id
}

// SetLeaseTTL changes the permit's lease TTL, for a holder that knows its
// work will be long (or short): the lease now ends ttl from now, in the
// backend's time, and every later renewal renews it by ttl (every ttl/3,
// or sooner if another permit of the process has a shorter lease). A longer
// lease means fewer renewals and survives a longer outage, but a process
// that dies keeps the permit for up to ttl.
//
// ttl must be in [100ms, 24h]; otherwise SetLeaseTTL returns an
// ErrInvalidArgument error and changes nothing. It returns an ErrNotHeld
// error if the permit was released, or if its lease ended, was released by
// id or was adopted by another process (Lost is then closed, or will be at
// its next renewal); an ErrUnavailable error if the backend could not be
// reached in time (bounded by the operation timeout), or an error wrapping
// ctx.Err() if ctx ended first; after either the new TTL still applies from
// the next renewal, which follows at once. A
// permit without a lease (Local, fail-open, fail-local) has nothing to
// change: SetLeaseTTL checks ttl and returns nil. A nested permit changes
// the lease of the permit it is nested in; a Keyed permit, that of its
// key's permit. A quorum permit, and one of a backend outside this package,
// cannot change its lease: that is an ErrInvalidArgument error.
func (p *Permit) SetLeaseTTL(ctx context.Context, ttl time.Duration) error {
	if p == nil {
		return invalid("SetLeaseTTL on a nil permit")
	}
	if ttl < minLeaseTTL || ttl > maxLeaseTTL {
		return invalid("lease TTL %v must be in [%v, %v]", ttl, minLeaseTTL, maxLeaseTTL)
	}
	if p.Released() {
		return fmt.Errorf("%w: SetLeaseTTL after Release (token %d)", ErrNotHeld, p.token)
	}
	if p.inner != nil {
		return p.inner.SetLeaseTTL(ctx, ttl)
	}
	if p.lost == nil {
		return nil
	}
	if p.ext != nil {
		ls, ok := p.ext.(leaseSetter)
		if !ok {
			return invalid("this permit's backend cannot change its lease")
		}
		if ctx == nil {
			ctx = context.Background()
		}
		return ls.SetPermitLease(ctx, p, ttl)
	}
	return invalid("this permit's backend cannot change its lease")
}
