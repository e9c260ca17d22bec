package core

import (
	"fmt"
	"time"
)

// Option configures a semaphore at construction (NewLocal, NewRedis and the
// keyed constructors). Options that only make sense for the Redis backend
// are ignored by the in-process one.
type Option func(*config)

type config struct {
	prefix   string
	leaseTTL time.Duration
	observer Observer
	policy   FailurePolicy
	onError  func(error)
	limits   map[string]int64
	maxIdle  int

	reentrant    bool          // WithReentrant
	quorumDrift  time.Duration // WithClockDrift
	quorumAnswer time.Duration // WithMasterTimeout
}

func defaultConfig() config {
	return config{prefix: "distsem:", leaseTTL: 10 * time.Second, policy: FailClosed, maxIdle: 4096}
}

func buildConfig(opts []Option) config {
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithKeyPrefix sets the prefix of every Redis key and pub/sub channel.
// The default is "distsem:". The prefix must not contain '{' or '}'.
func WithKeyPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithDefaultLeaseTTL sets the lease of permits acquired without
// WithLeaseTTL. A holder whose process dies gives its permit back at most
// this long after its last renewal; a waiter whose process dies leaves the
// queue within 2/3 of it. Leases are renewed every TTL/3, so a process must
// not stall for longer than 2/3 of the TTL. The default is 10s; the minimum
// is 100ms.
func WithDefaultLeaseTTL(d time.Duration) Option { return func(c *config) { c.leaseTTL = d } }

// WithObserver sets the hook that receives every Event. The default is none.
// The observer is called synchronously and must not block.
func WithObserver(o Observer) Option { return func(c *config) { c.observer = o } }

// WithFailurePolicy sets what Acquire and TryAcquire do when the backend
// cannot be reached. The default is FailClosed.
func WithFailurePolicy(p FailurePolicy) Option { return func(c *config) { c.policy = p } }

// WithOnError sets a hook called with every backend error, whatever the
// failure policy does with it. The default is none. It must not block.
func WithOnError(f func(error)) Option { return func(c *config) { c.onError = f } }

// WithLimits gives keyed semaphores per-key limits that override the
// default limit. The default is no overrides. Ignored by NewLocal and
// NewRedis.
func WithLimits(limits map[string]int64) Option { return func(c *config) { c.limits = limits } }

// WithMaxIdleKeys bounds how many idle per-key semaphores a keyed semaphore
// keeps in memory; older idle keys are dropped and created again on next
// use. The default is 4096. Ignored by NewLocal and NewRedis.
func WithMaxIdleKeys(n int) Option { return func(c *config) { c.maxIdle = n } }

// AcquireOption configures one Acquire or TryAcquire call.
type AcquireOption func(*acquireConfig)

type acquireConfig struct {
	weight int64
	ttl    time.Duration

	queued func() // called when a Redis waiter has queued (Quorum)
}

// WithWeight asks for n permits at once. The default is 1. A weight above
// the semaphore's limit fails at once with an ErrInvalidArgument error.
func WithWeight(n int64) AcquireOption { return func(a *acquireConfig) { a.weight = n } }

// WithLeaseTTL sets the lease of this permit. The default is the
// semaphore's WithDefaultLeaseTTL. The in-process backend ignores it.
func WithLeaseTTL(d time.Duration) AcquireOption { return func(a *acquireConfig) { a.ttl = d } }

const minLeaseTTL = 100 * time.Millisecond

func buildAcquire(def time.Duration, opts []AcquireOption) (acquireConfig, error) {
	if len(opts) == 0 { // the common case, kept free of allocations
		return acquireConfig{weight: 1, ttl: def}, nil
	}
	a := acquireConfig{weight: 1, ttl: def}
	for _, o := range opts {
		o(&a)
	}
	if a.weight <= 0 {
		return a, invalid("weight %d must be positive", a.weight)
	}
	if a.ttl < minLeaseTTL {
		return a, invalid("lease TTL %v is below the minimum %v", a.ttl, minLeaseTTL)
	}
	return a, nil
}

// FailurePolicy says what to do when the Redis backend is unreachable.
type FailurePolicy struct {
	mode     int
	fallback int64
}

var (
	// FailClosed returns an ErrUnavailable error: nothing runs while the
	// backend is down. This is the default, because a limiter that silently
	// stops limiting can overload the resource it protects.
	FailClosed = FailurePolicy{mode: 0}
	// FailOpen grants a permit (token 0) without limiting.
	FailOpen = FailurePolicy{mode: 1}
)

// FailLocal falls back to an in-process semaphore of k permits per process
// while the backend is down: the fleet-wide limit becomes k × processes.
func FailLocal(k int64) FailurePolicy {
	if k <= 0 {
		panic(fmt.Sprintf("core: FailLocal expects k > 0, got %d", k))
	}
	return FailurePolicy{mode: 2, fallback: k}
}

func (p FailurePolicy) String() string {
	switch p.mode {
	case 1:
		return "fail-open"
	case 2:
		return fmt.Sprintf("fail-local(%d)", p.fallback)
	}
	return "fail-closed"
}
