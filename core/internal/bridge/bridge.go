// Package bridge hands package core/backend the constructors that package
// core keeps unexported. core/backend imports core, so core cannot import
// it: core sets each variable below in its init, and core/backend asserts
// it, once, to the function type that its comment gives (in core's terms).
// Nothing else may use them.
package bridge

var (
	// NewPermit: func(r interface{ ReleasePermit(context.Context, *Permit) error },
	// weight, token int64, grantedAt time.Time, lost chan struct{}, id string) *Permit
	NewPermit any
	// WrapPermit: func(inner *Permit, r interface{ ReleasePermit(context.Context, *Permit) error }) *Permit
	WrapPermit any
	// NewKeyed: func(name string, defaultLimit int64, newSem func(Key, int64) LimitSemaphore,
	// closeAll func() error, opts []Option) *Keyed
	NewKeyed any
	// ResolveOptions: func(opts []Option) (prefix string, leaseTTL time.Duration,
	// obs Observer, onError func(error), policy FailurePolicy, owner string, keyed bool)
	ResolveOptions any
	// ResolveAcquire: func(defaultTTL time.Duration, opts []AcquireOption) (weight int64,
	// ttl time.Duration, ttlGiven bool, note, flow string, level int, err error)
	ResolveAcquire any
	// WaitError: func(ctx context.Context, name string) error
	WaitError any
	// NewShare: func(name string, limit int64, opts []Option) *Local (a share of 0)
	NewShare any
	// SetShare: func(l *Local, limit, share int64)
	SetShare any
	// ShareState: func(l *Local) (inUse, waitW, waitN, head, share, limit, grants int64)
	ShareState any
	// RaiseTokens: func(l *Local, base int64)
	RaiseTokens any
)
