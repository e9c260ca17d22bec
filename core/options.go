package core

import (
	"fmt"
	"strings"
	"time"

	"github.com/distsem/distsem/core/internal/names"
)

// Option configures a semaphore at construction. The options declared
// here are shared by every backend: the network backends (core/redissem,
// core/consul) take them, or forward their own options of the same names
// to them. A constructor honours every option it takes, and panics with a
// message naming the option on one it cannot honour:
//
//   - NewLocal takes WithName and WithObserver.
//   - NewLocalKeyed takes WithObserver, WithLimits and WithMaxIdleKeys.
//   - A network backend (backend.ResolveOptions) takes WithKeyPrefix,
//     WithDefaultLeaseTTL, WithObserver, WithFailurePolicy and WithOnError,
//     and its keyed constructor (backend.NewKeyed) also WithLimits and
//     WithMaxIdleKeys.
//
// Every constructor also panics on a nil Option, a key prefix with '{' or
// '}', a default lease TTL below 100ms, a negative WithMaxIdleKeys or a
// WithLimits limit outside [1, MaxLimit].
type Option func(*config)

type config struct {
	prefix   string
	leaseTTL time.Duration
	observer Observer
	policy   FailurePolicy
	onError  func(error)
	limits   map[string]int64
	maxIdle  int
	owner    string
	fair     Fairness

	name  string // WithName
	given optSet // the options given, for refuse
}

func defaultConfig() config {
	return config{name: "local", prefix: "distsem:", leaseTTL: 10 * time.Second, policy: FailClosed, maxIdle: 4096, owner: defaultOwner()}
}

// MaxLimit is the largest limit, weight or fallback size a semaphore
// accepts: 2^53 − 1, the largest integer that the Redis scripts (Lua
// numbers are doubles) represent exactly. Every backend enforces it, so they
// behave alike: a constructor given a larger limit panics, and Acquire,
// TryAcquire or SetLimit given a larger weight or limit returns an
// ErrInvalidArgument error before any script runs.
const MaxLimit int64 = 1<<53 - 1

// buildConfig applies opts and validates the result. It panics with a
// "core: …" message on a bad option: options are written by programmers,
// not read from requests, so a bad one is a bug to fix at startup.
func buildConfig(opts []Option) config {
	c := defaultConfig()
	for _, o := range opts {
		if o == nil {
			panic("core: nil Option")
		}
		o(&c)
	}
	if strings.ContainsAny(c.prefix, "{}") {
		panic(fmt.Sprintf("core: key prefix %q must not contain '{' or '}'", c.prefix))
	}
	if c.leaseTTL < minLeaseTTL {
		panic(fmt.Sprintf("core: WithDefaultLeaseTTL: lease TTL %v is below the minimum %v", c.leaseTTL, minLeaseTTL))
	}
	if c.maxIdle < 0 {
		panic(fmt.Sprintf("core: WithMaxIdleKeys expects n >= 0, got %d", c.maxIdle))
	}
	if why := names.CheckText(c.owner, MaxOwnerLen); why != "" {
		panic(fmt.Sprintf("core: WithOwner: owner %q: %s", c.owner, why))
	}
	for k, v := range c.limits {
		checkLimit(fmt.Sprintf("WithLimits: limit of key %q", k), v)
	}
	return c
}

// checkLimit panics unless 0 < limit <= MaxLimit; what names the value.
func checkLimit(what string, limit int64) {
	if limit <= 0 || limit > MaxLimit {
		panic(fmt.Sprintf("core: %s must be in [1, %d], got %d", what, MaxLimit, limit))
	}
}

// limitError returns an ErrInvalidArgument error unless 0 < limit <=
// MaxLimit.
func limitError(limit int64) error {
	if limit <= 0 || limit > MaxLimit {
		return invalid("limit %d must be in [1, %d]", limit, MaxLimit)
	}
	return nil
}

// WithKeyPrefix sets the prefix of every key (and Redis pub/sub channel)
// that a network backend stores. The default is "distsem:". The prefix must
// not contain '{' or '}'.
func WithKeyPrefix(prefix string) Option {
	return func(c *config) { c.prefix = prefix; c.given |= optKeyPrefix }
}

// WithDefaultLeaseTTL sets the lease of permits acquired without
// WithLeaseTTL. A holder whose process dies gives its permit back at most
// this long after its last renewal; a waiter whose process dies leaves the
// queue within 2/3 of it. Leases are renewed every TTL/3, so a process must
// not stall for longer than 2/3 of the TTL. The default is 10s; the minimum
// is 100ms: a constructor given less panics. Only network backends take
// it: a Local permit has no lease.
func WithDefaultLeaseTTL(d time.Duration) Option {
	return func(c *config) { c.leaseTTL = d; c.given |= optLeaseTTL }
}

// WithName names an in-process semaphore (NewLocal) in its events
// (Event.Name) and errors. The default is "local". Keyed semaphores name
// each key's semaphore by its key instead.
func WithName(name string) Option {
	return func(c *config) { c.name = name; c.given |= optName }
}

// WithObserver sets the hook that receives every Event. The default is none.
// The observer is called synchronously and must not block.
func WithObserver(o Observer) Option {
	return func(c *config) { c.observer = o; c.given |= optObserver }
}

// WithFailurePolicy sets what Acquire and TryAcquire do when the backend
// cannot be reached. The default is FailClosed.
func WithFailurePolicy(p FailurePolicy) Option {
	return func(c *config) { c.policy = p; c.given |= optPolicy }
}

// WithOnError sets a hook called with every backend error, whatever the
// failure policy does with it. The default is none. It must not block.
func WithOnError(f func(error)) Option {
	return func(c *config) { c.onError = f; c.given |= optOnError }
}

// WithLimits gives a keyed semaphore per-key limits that override the
// default limit. The default is no overrides. Only keyed constructors take
// it.
func WithLimits(limits map[string]int64) Option {
	return func(c *config) { c.limits = limits; c.given |= optLimits }
}

// WithMaxIdleKeys bounds how many idle per-key semaphores a keyed semaphore
// keeps in memory; older idle keys are dropped and created again on next
// use. The default is 4096; 0 keeps no idle key; a negative n makes the
// constructor panic. Only keyed constructors take it.
func WithMaxIdleKeys(n int) Option {
	return func(c *config) { c.maxIdle = n; c.given |= optMaxIdle }
}

// AcquireOption configures one Acquire or TryAcquire call.
type AcquireOption func(*acquireConfig)

type acquireConfig struct {
	weight  int64
	ttl     time.Duration
	ttlSet  bool // WithLeaseTTL was given
	note    string
	noteSet bool // WithNote was given
	flow    string
	flowSet bool // WithFlow was given
	level   int
}

// WithWeight asks for n permits at once. The default is 1. A weight that is
// not positive, above MaxLimit or above the semaphore's limit fails at once
// with an ErrInvalidArgument error.
func WithWeight(n int64) AcquireOption { return func(a *acquireConfig) { a.weight = n } }

// WithLeaseTTL sets the lease of this permit. The default is the
// semaphore's WithDefaultLeaseTTL. A TTL below 100ms fails the call with an
// ErrInvalidArgument error. A Local permit has no lease, so it is never
// lost whatever the TTL; a backend whose permits share one lease (the
// leased-shares mode, Consul's session) refuses the call with an
// ErrInvalidArgument error.
func WithLeaseTTL(d time.Duration) AcquireOption {
	return func(a *acquireConfig) { a.ttl, a.ttlSet = d, true }
}

const minLeaseTTL = 100 * time.Millisecond

func buildAcquire(def time.Duration, opts []AcquireOption) (acquireConfig, error) {
	if len(opts) == 0 { // the common case, kept free of allocations
		return acquireConfig{weight: 1, ttl: def}, nil
	}
	a := acquireConfig{weight: 1, ttl: def}
	for _, o := range opts {
		if o == nil {
			return a, invalid("nil AcquireOption")
		}
		o(&a)
	}
	if a.weight <= 0 || a.weight > MaxLimit {
		return a, invalid("weight %d must be in [1, %d]", a.weight, MaxLimit)
	}
	if a.ttl < minLeaseTTL {
		return a, invalid("lease TTL %v is below the minimum %v", a.ttl, minLeaseTTL)
	}
	if a.noteSet {
		if why := names.CheckText(a.note, MaxNoteLen); why != "" {
			return a, invalid("note: %s", why)
		}
	}
	return a, a.checkFlow()
}

// policyMode is what a FailurePolicy does.
type policyMode uint8

const (
	policyClosed policyMode = iota // refuse: ErrUnavailable
	policyOpen                     // grant without limiting
	policyLocal                    // grant from an in-process semaphore
)

// FailurePolicy says what a network backend does when it cannot reach its
// store.
type FailurePolicy struct {
	mode     policyMode
	fallback int64
}

var (
	// FailClosed returns an ErrUnavailable error: nothing runs while the
	// backend is down. This is the default, because a limiter that silently
	// stops limiting can overload the resource it protects.
	FailClosed = FailurePolicy{mode: policyClosed}
	// FailOpen grants a permit (token 0) without limiting.
	FailOpen = FailurePolicy{mode: policyOpen}
)

// FailLocal falls back to an in-process semaphore of k permits per process
// while the backend is down: the fleet-wide limit becomes k × processes.
// It panics unless 0 < k <= MaxLimit.
func FailLocal(k int64) FailurePolicy {
	checkLimit("FailLocal: k", k)
	return FailurePolicy{mode: policyLocal, fallback: k}
}

func (p FailurePolicy) String() string {
	switch p.mode {
	case policyOpen:
		return "fail-open"
	case policyLocal:
		return fmt.Sprintf("fail-local(%d)", p.fallback)
	}
	return "fail-closed"
}

// Open reports whether the policy is FailOpen.
func (p FailurePolicy) Open() bool { return p.mode == policyOpen }

// LocalLimit returns k for FailLocal(k), and 0 for any other policy.
func (p FailurePolicy) LocalLimit() int64 {
	if p.mode == policyLocal {
		return p.fallback
	}
	return 0
}
