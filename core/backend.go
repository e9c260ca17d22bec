package core

import (
	"context"
	"time"
)

// This file is the extension point for backends that live outside this
// package, such as core/consul, in a module of its own so that its
// dependencies stay out of the module graph of users who do not import it.
// Users of a backend need none of it.
//
// A backend implements Semaphore (and LimitSemaphore, to be keyed), reads
// its configuration with ResolveOptions and ResolveAcquire, and hands out
// *Permit values made by NewPermit. *Permit keeps its guarantees whatever
// the backend: Release runs the backend's release at most once; Lost,
// Token, GrantedAt and ID report what the backend granted; SetLeaseTTL
// reaches a backend whose Releaser is a LeaseSetter. NewKeyed makes a keyed
// semaphore of any backend, and Reentrant and ReentrantKeyed work on any.

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
	// ID is the permit's handle in the backend, returned by Permit.ID;
	// empty if it has none.
	ID string
}

// LeaseSetter is a Releaser whose permits' lease can change. Permit's
// SetLeaseTTL calls SetPermitLease after it checked ttl (in [100ms, 24h])
// and that p is held and has a lease, and returns its error: an error
// matching ErrNotHeld if the lease had already ended, ErrUnavailable if
// the backend could not be reached. A backend whose Releaser is not a
// LeaseSetter refuses SetLeaseTTL with an ErrInvalidArgument error.
type LeaseSetter interface {
	SetPermitLease(ctx context.Context, p *Permit, ttl time.Duration) error
}

// NewPermit returns a held permit of g, released through r. A nil r makes a
// permit whose Release does nothing, as for a fail-open grant.
func NewPermit(r Releaser, g Grant) *Permit {
	x := permitExt{owner: nopOwner{}, lost: g.Lost, id: g.ID}
	if r != nil {
		x.owner, x.ext = nil, r
	}
	if !g.GrantedAt.IsZero() {
		x.grantUS = g.GrantedAt.UnixMicro()
	}
	return newPermit(x, g.Weight, g.Token)
}

// NewKeyed returns a keyed semaphore named name over any backend: newSem
// makes the semaphore of a key on its first use (and again after the key
// was evicted), with the default limit or the key's override, named
// k.Name(name) or k.HashedName(name) in the backend's storage, so that no
// key reaches another key or a plain semaphore. closeAll closes the
// backend at Keyed.Close; if it is nil, Keyed closes each key's semaphore
// that has a Close method instead: in the background when the key is
// evicted (then it holds no permit and no waiter of this process), and at
// Keyed.Close, which also waits for those. Keyed.Adopt
// and ReleaseID reach a key's semaphore that has Adopt and ReleaseID
// methods of the Redis backend's shape. It panics as NewLocalKeyed does, and
// on a name that is empty or contains '{', '}', '#' or white space.
func NewKeyed(name string, defaultLimit int64, newSem func(k Key, limit int64) LimitSemaphore, closeAll func() error, opts ...Option) *Keyed {
	checkName(name)
	if newSem == nil {
		panic("core: NewKeyed expects a non-nil newSem")
	}
	cfg := buildConfig(opts)
	cfg.refuse("NewKeyed", optsRemote|optsKeyed)
	return newKeyed(defaultLimit, cfg, newSem, closeAll)
}

// BackendConfig is what a backend outside this package reads from the
// Options given to its constructor.
type BackendConfig struct {
	KeyPrefix string        // WithKeyPrefix; default "distsem:"
	LeaseTTL  time.Duration // WithDefaultLeaseTTL; default 10s
	Observer  Observer      // WithObserver; nil if none
	OnError   func(error)   // WithOnError; nil if none
	Policy    FailurePolicy // WithFailurePolicy; default FailClosed
	Owner     string        // WithOwner; default DefaultOwner(), "" for none
	// Keyed reports that WithLimits or WithMaxIdleKeys was given: only
	// NewKeyed honours them, so a constructor of one semaphore panics.
	Keyed bool
}

// ResolveOptions applies opts to the defaults and returns the result. It
// panics, naming the option, on one that a network backend cannot honour:
// WithName (an in-process semaphore's). WithLimits and WithMaxIdleKeys are
// reported in Keyed, for the backend's constructor to refuse them unless
// it is keyed.
func ResolveOptions(opts ...Option) BackendConfig {
	c := buildConfig(opts)
	c.refuse("ResolveOptions", optsRemote|optsKeyed)
	return BackendConfig{KeyPrefix: c.prefix, LeaseTTL: c.leaseTTL, Observer: c.observer, OnError: c.onError, Policy: c.policy, Owner: c.owner,
		Keyed: c.given&optsKeyed != 0}
}

// AcquireSpec is what one Acquire or TryAcquire call asks for.
type AcquireSpec struct {
	Weight   int64         // WithWeight; default 1
	LeaseTTL time.Duration // WithLeaseTTL; default the semaphore's lease TTL
	// LeaseTTLGiven reports that the call gave WithLeaseTTL: a backend
	// that cannot give a permit its own lease refuses the call with an
	// ErrInvalidArgument error rather than ignore it.
	LeaseTTLGiven bool
	Note          string // WithNote; default "", checked already
	Flow          string // WithFlow; default "", checked already
	Level         int    // WithLevel; default 0, in [0, MaxLevels)
}

// ResolveAcquire applies opts to the defaults (weight 1, lease defaultTTL).
// It returns an ErrInvalidArgument error for a weight <= 0 or a lease
// below 100ms.
func ResolveAcquire(defaultTTL time.Duration, opts ...AcquireOption) (AcquireSpec, error) {
	a, err := buildAcquire(defaultTTL, opts)
	return AcquireSpec{Weight: a.weight, LeaseTTL: a.ttl, LeaseTTLGiven: a.ttlSet, Note: a.note, Flow: a.flow, Level: a.level}, err
}

// WaitError is the error of an Acquire whose wait ended with ctx: it
// matches ErrNoPermit and context.DeadlineExceeded if the deadline passed,
// context.Canceled if ctx was cancelled. name is the semaphore's.
func WaitError(ctx context.Context, name string) error { return ctxError(ctx, name) }

// Open reports whether the policy is FailOpen.
func (p FailurePolicy) Open() bool { return p.mode == policyOpen }

// LocalLimit returns k for FailLocal(k), and 0 for any other policy.
func (p FailurePolicy) LocalLimit() int64 {
	if p.mode == policyLocal {
		return p.fallback
	}
	return 0
}
