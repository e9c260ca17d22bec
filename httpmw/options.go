package httpmw

import (
	"net/http"
	"time"

	"github.com/distsem/distsem/core/admit"
)

// Option configures Limit and Handler.
type Option func(*options)

// RejectFunc writes the response to a rejected request. code is the status
// the middleware would write, or 0 when the client went away (then nothing
// should be written). Retry-After is already set in w's header when it
// applies. rej.Err may hold backend details: log it, never write it.
type RejectFunc func(w http.ResponseWriter, r *http.Request, code int, rej *admit.Rejection)

type options struct {
	key        func(*http.Request) string
	flow       func(*http.Request) (string, int)
	status     int
	retryWait  time.Duration // the WithRetryAfter value
	retryAfter string        // header value, "" for none; set by Limit
	reject     RejectFunc
	admit      []admit.Option
}

func defaultOptions() options {
	return options{status: http.StatusTooManyRequests, reject: defaultReject}
}

// WithKey sets the function that maps a request to its semaphore key;
// every request, matched or not, then takes a permit of its key. The
// default (key nil) is the request's ServeMux pattern: r.Pattern when
// the middleware wraps a handler registered on a ServeMux; the pattern
// that mux.Handler(r) resolves when it wraps a *http.ServeMux itself
// (whatever r.Pattern an outer mux set), and
// no permit at all when no pattern matches (the mux then answers 404, 405
// or a redirect); UnroutedKey otherwise.
func WithKey(f func(r *http.Request) string) Option { return func(o *options) { o.key = f } }

// WithFlow sets the function that names a request's flow (a tenant, an API
// key, the client's address) and priority level (0 is the highest), for a
// semaphore with flows (see core.WithFlow): requests of one flow wait in
// arrival order, and backlogged flows share the limit fairly. The handler's
// ctx carries them too (core.ContextWithFlow), so that a database query
// made through sqlmw waits in the same flow. The default (nil) names no
// flow. A flow of "" is the default flow. A semaphore without flows
// refuses a flow with an error, and the request gets 503.
func WithFlow(f func(r *http.Request) (flow string, level int)) Option {
	return func(o *options) { o.flow = f }
}

// WithStatus sets the status written when no permit could be had. The
// default is 429 Too Many Requests; 503 Service Unavailable is the usual
// alternative. A backend failure is always 503.
func WithStatus(code int) Option { return func(o *options) { o.status = code } }

// WithRetryAfter sets the Retry-After header of 429 and 503 responses,
// rounded up to whole seconds. 0 means admit.DefaultRetryAfter (1s), the
// default; admit.NoRetryAfter sends no header.
func WithRetryAfter(d time.Duration) Option {
	return func(o *options) { o.retryWait = d }
}

// WithRejectHandler sets the function that writes rejections. The default
// writes the status and its text (http.Error), and nothing when the client
// went away.
func WithRejectHandler(f RejectFunc) Option { return func(o *options) { o.reject = f } }

// WithMaxWait sets how long a request may wait for a permit; see
// admit.WithMaxWait: 0 rejects at once when none is free (the default),
// admit.WaitForever waits as long as the request's context allows.
func WithMaxWait(d time.Duration) Option {
	return func(o *options) { o.admit = append(o.admit, admit.WithMaxWait(d)) }
}

// WithMaxWaiting bounds how many requests of one key may wait in this
// process; see admit.WithMaxWaiting: 0 means admit.DefaultMaxWaiting (128),
// the default; admit.NoWaiting lets none wait.
func WithMaxWaiting(n int) Option {
	return func(o *options) { o.admit = append(o.admit, admit.WithMaxWaiting(n)) }
}

// WithReleaseTimeout bounds the backend round trip of a release; see
// admit.WithReleaseTimeout: 0 means admit.DefaultReleaseTimeout (2s), the
// default.
func WithReleaseTimeout(d time.Duration) Option {
	return func(o *options) { o.admit = append(o.admit, admit.WithReleaseTimeout(d)) }
}

// WithObserver sets the hook that receives admission events, such as a
// promadmit.Collector. The default is none.
func WithObserver(obs admit.Observer) Option {
	return func(o *options) { o.admit = append(o.admit, admit.WithObserver(obs)) }
}
