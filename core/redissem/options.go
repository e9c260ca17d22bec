package redissem

import (
	"context"
	"fmt"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"
)

// Option configures a semaphore of this package at construction. Every
// constructor takes every option but these: only NewKeyed and
// NewLeasedKeyed take WithLimits and WithMaxIdleKeys, only NewQuorum
// and NewAllOf take WithClockDrift and WithMasterTimeout, and only New and
// NewKeyed take WithFairness and WithReplicaAck; a constructor given an
// option it cannot honour panics with a message naming it, as it does on
// a nil Option or a bad value (a key prefix with '{' or '}', a lease TTL
// below 100ms, a negative duration).
type Option func(*config)

type config struct {
	shared []core.Option // the options declared in core, forwarded

	// From shared, resolved by backend.ResolveOptions.
	prefix   string
	leaseTTL time.Duration
	observer core.Observer
	policy   core.FailurePolicy
	onError  func(error)
	keyed    bool   // WithLimits or WithMaxIdleKeys was given
	owner    string // WithOwner: what this process's owner records say (lib.lua)

	fault        faultConfig   // options_fault.go
	quorumDrift  time.Duration // WithClockDrift; 0: by lease (clockDrift)
	quorumAnswer time.Duration // WithMasterTimeout; 0: by lease (masterTimeout)
	quorumOpts   bool          // one of the two was given
	ack          ackConfig     // WithReplicaAck (options_ack.go)

	fair    core.Fairness // WithFairness (redis_fair.go)
	fairSet bool
}

// The defaults of this package's options, applied by buildConfig; the
// options declared in core take core's defaults (backend.ResolveOptions).
const (
	defaultOpTimeout = time.Second            // WithOperationTimeout
	defaultFailures  = 3                      // WithCircuitBreaker
	defaultCooldown  = 500 * time.Millisecond // WithCircuitBreaker
	// WithOutageGrace: the smaller of maxOutageGrace and the default lease
	// TTL / outageGraceDiv.
	maxOutageGrace = 2 * time.Second
	outageGraceDiv = 3
	// WithClockDrift: the lease TTL / driftDiv + driftMin (Redlock's).
	driftDiv = 100
	driftMin = 2 * time.Millisecond
	// WithMasterTimeout: the lease TTL / masterTimeoutDiv.
	masterTimeoutDiv = 10
)

// What a constructor takes beyond the options every one of them takes.
type takes int

const (
	takesNone   takes = 0
	takesKeyed  takes = 1 << iota // WithLimits, WithMaxIdleKeys
	takesQuorum                   // WithClockDrift, WithMasterTimeout
	takesFair                     // WithFairness
	takesAck                      // WithReplicaAck
)

// buildConfig applies opts and validates the result. It panics, naming
// ctor and the option, on a bad option or one that ctor cannot honour.
func buildConfig(ctor string, t takes, opts []Option) config {
	var c config
	for _, o := range opts {
		if o == nil {
			panic(fmt.Sprintf("redissem: %s: nil Option", ctor))
		}
		o(&c)
	}
	bc := backend.ResolveOptions(c.shared...)
	c.prefix, c.leaseTTL, c.observer, c.policy, c.onError, c.keyed = bc.KeyPrefix, bc.LeaseTTL, bc.Observer, bc.Policy, bc.OnError, bc.Keyed
	c.owner = bc.Owner
	if c.keyed && t&takesKeyed == 0 {
		panic(fmt.Sprintf("redissem: %s does not take WithLimits or WithMaxIdleKeys: they configure NewKeyed", ctor))
	}
	if c.fairSet && t&takesFair == 0 {
		panic(fmt.Sprintf("redissem: %s does not take WithFairness: only New and NewKeyed have flows and priority levels", ctor))
	}
	if c.quorumOpts && t&takesQuorum == 0 {
		panic(fmt.Sprintf("redissem: %s does not take WithClockDrift or WithMasterTimeout: they configure NewQuorum", ctor))
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"WithOperationTimeout", c.fault.opTimeout}, {"WithCircuitBreaker: cool-down", c.fault.cooldown},
		{"WithOutageGrace", c.fault.outageGrace}, {"WithClockDrift", c.quorumDrift}, {"WithMasterTimeout", c.quorumAnswer}} {
		if d.d < 0 {
			panic(fmt.Sprintf("redissem: %s must not be negative (0 means the default), got %v", d.name, d.d))
		}
	}
	c.resolveDefaults()
	c.checkAck(ctor, t)
	return c
}

// resolveDefaults replaces the options left unset (zero) by their
// defaults. The quorum's two depend on each Acquire's lease TTL: they are
// applied by clockDrift and masterTimeout.
func (c *config) resolveDefaults() {
	f := &c.fault
	if f.opTimeout == 0 {
		f.opTimeout = defaultOpTimeout
	}
	if f.failures == 0 {
		f.failures = defaultFailures
	}
	if f.cooldown == 0 {
		f.cooldown = defaultCooldown
	}
	if f.outageGrace == 0 {
		f.outageGrace = min(maxOutageGrace, c.leaseTTL/outageGraceDiv)
	}
}

// clockDrift is the allowance of WithClockDrift for a lease of ttl.
func (c *config) clockDrift(ttl time.Duration) time.Duration {
	if c.quorumDrift > 0 {
		return c.quorumDrift
	}
	return ttl/driftDiv + driftMin
}

// masterTimeout is how long a quorum Acquire of a lease of ttl waits for a
// master to answer (WithMasterTimeout).
func (c *config) masterTimeout(ttl time.Duration) time.Duration {
	if c.quorumAnswer > 0 {
		return c.quorumAnswer
	}
	return ttl / masterTimeoutDiv
}

func (c *config) observe(e core.Event) {
	if c.observer != nil {
		c.observer.Observe(e)
	}
}

// reportLost reports a permit of the semaphore name lost (with err, if
// known): first EventLost, with the values of ctx, the acquiring call's
// (nil for an adopted permit), but not its cancellation, so that an
// observer sees it while the permit's caller still waits on Lost (and,
// say, its trace span is open); then it closes lost. It must not be called
// with a lock held that an observer calling back into the semaphore would
// take.
func (c *config) reportLost(ctx context.Context, name string, weight int64, err error, lost chan struct{}) {
	if ctx != nil {
		ctx = context.WithoutCancel(ctx)
	}
	c.observe(core.Event{Kind: core.EventLost, Name: name, Weight: weight, Err: err, Ctx: ctx})
	close(lost)
}

func shared(o core.Option) Option { return func(c *config) { c.shared = append(c.shared, o) } }

// WithKeyPrefix sets the prefix of every Redis key and pub/sub channel; see
// core.WithKeyPrefix. The default is "distsem:".
func WithKeyPrefix(prefix string) Option { return shared(core.WithKeyPrefix(prefix)) }

// WithDefaultLeaseTTL sets the lease of permits acquired without
// core.WithLeaseTTL; see core.WithDefaultLeaseTTL. The default is 10s, the
// minimum 100ms.
func WithDefaultLeaseTTL(d time.Duration) Option { return shared(core.WithDefaultLeaseTTL(d)) }

// WithObserver sets the hook that receives every core.Event; see
// core.WithObserver. The default is none.
func WithObserver(o core.Observer) Option { return shared(core.WithObserver(o)) }

// WithFailurePolicy sets what Acquire and TryAcquire do when Redis cannot
// be reached; see core.FailurePolicy. The default is core.FailClosed.
func WithFailurePolicy(p core.FailurePolicy) Option { return shared(core.WithFailurePolicy(p)) }

// WithOnError sets a hook called with every backend error, whatever the
// failure policy does with it; see core.WithOnError. The default is none.
func WithOnError(f func(error)) Option { return shared(core.WithOnError(f)) }

// WithLimits gives a keyed semaphore per-key limits that override the
// default limit; see core.WithLimits. The default is no overrides. Only
// NewKeyed and NewLeasedKeyed take it.
func WithLimits(limits map[string]int64) Option { return shared(core.WithLimits(limits)) }

// WithMaxIdleKeys bounds how many idle per-key semaphores a keyed semaphore
// keeps in memory; see core.WithMaxIdleKeys. The default is 4096. Only
// NewKeyed and NewLeasedKeyed take it.
func WithMaxIdleKeys(n int) Option { return shared(core.WithMaxIdleKeys(n)) }

// WithOwner names this process in what Inspect lists; see core.WithOwner.
// The default is core.DefaultOwner(): the host name and process id.
func WithOwner(owner string) Option { return shared(core.WithOwner(owner)) }
