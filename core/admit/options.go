package admit

import "time"

// Option configures a Controller.
type Option func(*options)

type options struct {
	maxWait        time.Duration
	maxWaiting     int
	releaseTimeout time.Duration
	observer       Observer
}

var defaultOptions = options{
	maxWait:        0,
	maxWaiting:     128,
	releaseTimeout: 2 * time.Second,
}

// WithMaxWait sets how long a request may wait for a permit when none is
// free. The wait is a context.WithTimeout of the request's context, so a
// shorter request deadline wins. The default is 0: a request that finds no
// free permit is rejected at once, as in Hystrix's semaphore isolation.
func WithMaxWait(d time.Duration) Option { return func(o *options) { o.maxWait = d } }

// WithMaxWaiting bounds how many requests of one key may wait at once in
// this process; past it a request is rejected at once with
// ErrTooManyWaiting. With n processes sharing a Redis semaphore, up to n
// times this many may wait fleet-wide. It only matters with WithMaxWait.
// The default is 128; 0 lets no one wait.
func WithMaxWaiting(n int) Option { return func(o *options) { o.maxWaiting = n } }

// WithReleaseTimeout bounds the backend round trip of Ticket.Release. The
// default is 2s. A release that times out leaves the permit to expire with
// its lease.
func WithReleaseTimeout(d time.Duration) Option { return func(o *options) { o.releaseTimeout = d } }

// WithObserver sets the hook that receives every Event, such as a
// promadmit.Collector. The default is none.
func WithObserver(obs Observer) Option { return func(o *options) { o.observer = obs } }
