package admit

import (
	"fmt"
	"time"
)

// Option values that mean the same in every adapter (httpmw, grpcmw,
// echomw and sqlmw); see "One vocabulary" in the package documentation.
const (
	// WaitForever, as a MaxWait, waits for a permit as long as the
	// request's context allows.
	WaitForever time.Duration = -1
	// NoWaiting, as a MaxWaiting, lets no request wait: one that finds no
	// free permit is rejected at once, whatever MaxWait says.
	NoWaiting = -1
	// NoRetryAfter, as a RetryAfter, sends no retry hint with a rejection.
	NoRetryAfter time.Duration = -1

	// DefaultMaxWaiting is the MaxWaiting used when it is 0 or not set.
	DefaultMaxWaiting = 128
	// DefaultReleaseTimeout is the ReleaseTimeout used when it is 0 or not
	// set.
	DefaultReleaseTimeout = 2 * time.Second
	// DefaultRetryAfter is the RetryAfter used when it is 0 or not set.
	DefaultRetryAfter = time.Second
)

// Option configures a Controller.
type Option func(*options)

type options struct {
	maxWait        time.Duration
	maxWaiting     int
	releaseTimeout time.Duration
	observer       Observer
}

var defaultOptions = options{}

// resolve applies the defaults and checks the values; it returns an error
// naming the first bad one.
func (o *options) resolve() error {
	switch {
	case o.maxWait < 0 && o.maxWait != WaitForever:
		return fmt.Errorf("admit: MaxWait must be >= 0 or WaitForever, got %v", o.maxWait)
	case o.maxWaiting < 0 && o.maxWaiting != NoWaiting:
		return fmt.Errorf("admit: MaxWaiting must be >= 0 or NoWaiting, got %d", o.maxWaiting)
	case o.releaseTimeout < 0:
		return fmt.Errorf("admit: ReleaseTimeout must be >= 0, got %v", o.releaseTimeout)
	}
	if o.maxWaiting == 0 {
		o.maxWaiting = DefaultMaxWaiting
	}
	if o.releaseTimeout == 0 {
		o.releaseTimeout = DefaultReleaseTimeout
	}
	return nil
}

// WithMaxWait sets how long a request may wait for a permit when none is
// free: d > 0 waits up to d (a context.WithTimeout of the request's
// context, so a shorter request deadline wins); 0 never waits, rejecting at
// once as in Hystrix's semaphore isolation; WaitForever waits as long as
// the request's context allows. The default is 0.
func WithMaxWait(d time.Duration) Option { return func(o *options) { o.maxWait = d } }

// WithMaxWaiting bounds how many requests of one key may wait at once in
// this process; past it a request is rejected at once with
// ErrTooManyWaiting. With n processes sharing a Redis semaphore, up to n
// times this many may wait fleet-wide. It only matters with WithMaxWait.
// n > 0 is the bound; 0 means DefaultMaxWaiting (128), the default;
// NoWaiting lets no one wait.
func WithMaxWaiting(n int) Option { return func(o *options) { o.maxWaiting = n } }

// WithReleaseTimeout bounds the backend round trip of Ticket.Release. A
// release that times out leaves the permit to expire with its lease. 0
// means DefaultReleaseTimeout (2s), the default.
func WithReleaseTimeout(d time.Duration) Option { return func(o *options) { o.releaseTimeout = d } }

// WithObserver sets the hook that receives every Event, such as a
// promadmit.Collector. The default is none.
func WithObserver(obs Observer) Option { return func(o *options) { o.observer = obs } }

// RetryAfter resolves a RetryAfter value of an adapter: 0 means
// DefaultRetryAfter, NoRetryAfter means none (ok false), d > 0 is itself.
// It returns an error for any other negative value. Adapters round the
// hint up to their unit: whole seconds for HTTP's Retry-After,
// milliseconds for gRPC's pushback.
func RetryAfter(d time.Duration) (hint time.Duration, ok bool, err error) {
	switch {
	case d == 0:
		return DefaultRetryAfter, true, nil
	case d == NoRetryAfter:
		return 0, false, nil
	case d < 0:
		return 0, false, fmt.Errorf("admit: RetryAfter must be >= 0 or NoRetryAfter, got %v", d)
	}
	return d, true, nil
}
