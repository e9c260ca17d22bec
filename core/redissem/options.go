package redissem

import (
	"fmt"
	"time"

	"github.com/distsem/distsem/core"
)

// Option configures a semaphore of this package at construction. Every
// constructor takes every option but these: only NewKeyed and
// NewLeasedKeyed take WithLimits and WithMaxIdleKeys, and only NewQuorum
// and NewAllOf take WithClockDrift and WithMasterTimeout; a constructor
// given an option it cannot honour panics with a message naming it, as it
// does on a nil Option or a bad value (a key prefix with '{' or '}', a
// lease TTL below 100ms, a negative duration).
type Option func(*config)

type config struct {
	shared []core.Option // the options declared in core, forwarded

	// From shared, resolved by core.ResolveOptions.
	prefix   string
	leaseTTL time.Duration
	observer core.Observer
	policy   core.FailurePolicy
	onError  func(error)
	keyed    bool // WithLimits or WithMaxIdleKeys was given

	fault        faultConfig   // options_fault.go
	quorumDrift  time.Duration // WithClockDrift
	quorumAnswer time.Duration // WithMasterTimeout
	quorumOpts   bool          // one of the two was given
}

// What a constructor takes beyond the options every one of them takes.
type takes int

const (
	takesNone   takes = 0
	takesKeyed  takes = 1 << iota // WithLimits, WithMaxIdleKeys
	takesQuorum                   // WithClockDrift, WithMasterTimeout
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
	bc := core.ResolveOptions(c.shared...)
	c.prefix, c.leaseTTL, c.observer, c.policy, c.onError, c.keyed = bc.KeyPrefix, bc.LeaseTTL, bc.Observer, bc.Policy, bc.OnError, bc.Keyed
	if c.keyed && t&takesKeyed == 0 {
		panic(fmt.Sprintf("redissem: %s does not take WithLimits or WithMaxIdleKeys: they configure NewKeyed", ctor))
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
	return c
}

func (c *config) observe(e core.Event) {
	if c.observer != nil {
		c.observer.Observe(e)
	}
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
