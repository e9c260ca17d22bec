package core

// WrapPermit returns a permit that stands for inner, for a semaphore that
// wraps another one (a limiter that watches its permits): it has inner's
// weight, token, grant time, ID and Lost channel, and SetLeaseTTL changes
// inner's lease. Its Release calls r.ReleasePermit once, with the permit
// returned here; r must release inner (inner.Release, with the ctx it was
// given). WrapPermit panics if inner or r is nil.
//
// A permit made by NewPermit owns a Lost channel of its own, so a wrapper
// built with it would have to watch inner's channel with a goroutine per
// permit; WrapPermit shares it instead.
func WrapPermit(inner *Permit, r Releaser) *Permit {
	if inner == nil || inner.permitExt == nil || r == nil {
		panic("core: WrapPermit expects a held permit and a non-nil Releaser")
	}
	return newPermit(permitExt{ext: r, lost: inner.lost, inner: inner, grantUS: inner.grantUS}, inner.weight, inner.token)
}
