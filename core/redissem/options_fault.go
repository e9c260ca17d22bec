package redissem

import "time"

// faultConfig holds the options that bound the Redis backend's behaviour
// under faults. buildConfig replaces the zero values by the defaults
// (options.go); failures is then -1 when the breaker is disabled.
type faultConfig struct {
	opTimeout   time.Duration
	failures    int
	cooldown    time.Duration
	outageGrace time.Duration
}

// WithOperationTimeout bounds every round trip to Redis (one script,
// including go-redis's own retries of it) to d, within the caller's ctx.
// Until the user's rights have been checked once, a call first checks
// them within that one bound; if the check gets no answer, the call fails
// then, without sending its script.
// A round trip that takes longer counts as a backend failure, so the
// failure policy applies after at most d. Its error wraps
// context.DeadlineExceeded, or, when the client's dials were failing
// meanwhile, the dial error (a *net.OpError such as "connection refused")
// instead. The default is 1s.
func WithOperationTimeout(d time.Duration) Option {
	return func(c *config) { c.fault.opTimeout = d }
}

// WithCircuitBreaker opens the breaker after failures consecutive backend
// failures (time-outs, refused or broken connections; not Redis error
// replies nor a caller's cancellation). While it is open, Acquire,
// TryAcquire and the other calls take the failure policy at once, without
// a round trip, for cooldown; then one call probes Redis, and its success
// closes the breaker. Renewals are never refused: they act as probes. The
// defaults are 3 failures and a cool-down of 500ms; failures <= 0 disables the
// breaker.
func WithCircuitBreaker(failures int, cooldown time.Duration) Option {
	return func(c *config) {
		c.fault.failures = failures
		if failures <= 0 {
			c.fault.failures = -1
		}
		c.fault.cooldown = cooldown
	}
}

// WithOutageGrace sets how long the backend may stay unreachable (every
// round trip failing, counted from the first failure) before queued Acquire
// calls stop waiting and take the failure policy: FailClosed returns an
// ErrUnavailable error, FailOpen and FailLocal hand out their permits. An
// outage is noticed by the next round trip, at the latest by the renewal
// loop every lease TTL/3, so a queued waiter gets the policy at most TTL/3
// + the operation timeout + d after Redis went silent. A waiter's ctx still
// bounds it. The default is the smaller of 2s and TTL/3.
func WithOutageGrace(d time.Duration) Option {
	return func(c *config) { c.fault.outageGrace = d }
}
