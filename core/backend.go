package core

import (
	"context"
	"time"
)

// This file is the extension point for backends that live outside this
// package, in their own modules (such as core/consul), so that their
// dependencies stay out of the module graph of users who do not import
// them. Such a backend implements Semaphore, reads its configuration with
// ResolveOptions and ResolveAcquire, and hands out *Permit values made by
// NewPermit; *Permit keeps its guarantees whatever the backend: Release runs
// the backend's release at most once, Lost, Token and GrantedAt report what
// the backend granted.

// Releaser gives back the permits of a backend outside this package.
type Releaser interface {
	// ReleasePermit returns p to its semaphore. Permit.Release calls it at
	// most once per permit, with the ctx given to Release, and returns its
	// error: an error matching ErrNotHeld if the lease had already ended, or
	// ErrUnavailable if the backend could not be reached.
	ReleasePermit(ctx context.Context, p *Permit) error
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
}

// NewPermit returns a held permit of g, released through r. A nil r makes a
// permit whose Release does nothing, as for a fail-open grant.
func NewPermit(r Releaser, g Grant) *Permit {
	x := permitExt{owner: nopOwner{}, lost: g.Lost}
	if r != nil {
		x.owner = external{r}
	}
	if !g.GrantedAt.IsZero() {
		x.grantUS = g.GrantedAt.UnixMicro()
	}
	return newPermit(x, g.Weight, g.Token)
}

// external adapts a Releaser to the permit's owner.
type external struct{ r Releaser }

func (e external) release(ctx context.Context, p *Permit) error { return e.r.ReleasePermit(ctx, p) }

// BackendConfig is what a backend outside this package reads from the
// Options given to its constructor.
type BackendConfig struct {
	KeyPrefix string        // WithKeyPrefix; default "distsem:"
	LeaseTTL  time.Duration // WithDefaultLeaseTTL; default 10s
	Observer  Observer      // WithObserver; nil if none
	OnError   func(error)   // WithOnError; nil if none
	Policy    FailurePolicy // WithFailurePolicy; default FailClosed
}

// ResolveOptions applies opts to the defaults and returns the result.
func ResolveOptions(opts ...Option) BackendConfig {
	c := buildConfig(opts)
	return BackendConfig{KeyPrefix: c.prefix, LeaseTTL: c.leaseTTL, Observer: c.observer, OnError: c.onError, Policy: c.policy}
}

// AcquireSpec is what one Acquire or TryAcquire call asks for.
type AcquireSpec struct {
	Weight   int64         // WithWeight; default 1
	LeaseTTL time.Duration // WithLeaseTTL; default the semaphore's lease TTL
}

// ResolveAcquire applies opts to the defaults (weight 1, lease defaultTTL).
// It returns an ErrInvalidArgument error for a weight <= 0 or a lease
// below 100ms.
func ResolveAcquire(defaultTTL time.Duration, opts ...AcquireOption) (AcquireSpec, error) {
	a, err := buildAcquire(defaultTTL, opts)
	return AcquireSpec{Weight: a.weight, LeaseTTL: a.ttl}, err
}

// WaitError is the error of an Acquire whose wait ended with ctx: it
// matches ErrNoPermit and context.DeadlineExceeded if the deadline passed,
// context.Canceled if ctx was cancelled. name is the semaphore's.
func WaitError(ctx context.Context, name string) error { return ctxError(ctx, name) }

// Open reports whether the policy is FailOpen.
func (p FailurePolicy) Open() bool { return p.mode == 1 }

// LocalLimit returns k for FailLocal(k), and 0 for any other policy.
func (p FailurePolicy) LocalLimit() int64 {
	if p.mode == 2 {
		return p.fallback
	}
	return 0
}
