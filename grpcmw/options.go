package grpcmw

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/distsem/distsem/core/admit"
)

// Option configures the interceptors.
type Option func(*options)

// RejectFunc returns the error for a rejected call. ctx is the call's
// context and fullMethod its method. rej.Err may hold backend details:
// log it, never return its text.
type RejectFunc func(ctx context.Context, fullMethod string, rej *admit.Rejection) error

type options struct {
	key    func(ctx context.Context, fullMethod string) string
	reject RejectFunc
	admit  []admit.Option
}

func defaultOptions() options {
	return options{key: defaultKey, reject: defaultReject}
}

func defaultKey(_ context.Context, fullMethod string) string { return fullMethod }

// Status errors of the default RejectFunc. Their messages name no backend
// detail.
var (
	errNoCapacity  = status.Error(codes.ResourceExhausted, "distsem: concurrency limit reached, retry later")
	errUnavailable = status.Error(codes.Unavailable, "distsem: concurrency limiter unavailable")
)

func defaultReject(ctx context.Context, _ string, rej *admit.Rejection) error {
	switch rej.Reason {
	case admit.NoCapacity:
		return errNoCapacity
	case admit.ClientGone:
		return status.FromContextError(ctx.Err()).Err()
	}
	return errUnavailable
}

// WithKey sets the function that maps a call to its semaphore key. The
// default is the full method name.
func WithKey(f func(ctx context.Context, fullMethod string) string) Option {
	return func(o *options) { o.key = f }
}

// WithRejectHandler sets the function that builds the error of a rejected
// call. The default returns ResourceExhausted for no capacity, Unavailable
// for a backend failure, and status.FromContextError when the caller's
// context ended.
func WithRejectHandler(f RejectFunc) Option { return func(o *options) { o.reject = f } }

// WithMaxWait sets how long a call may wait for a permit; see
// admit.WithMaxWait. The default is 0: reject at once when none is free.
func WithMaxWait(d time.Duration) Option {
	return func(o *options) { o.admit = append(o.admit, admit.WithMaxWait(d)) }
}

// WithMaxWaiting bounds how many calls of one key may wait in this
// process; see admit.WithMaxWaiting. The default is 128.
func WithMaxWaiting(n int) Option {
	return func(o *options) { o.admit = append(o.admit, admit.WithMaxWaiting(n)) }
}

// WithReleaseTimeout bounds the backend round trip of a release; see
// admit.WithReleaseTimeout. The default is 2s.
func WithReleaseTimeout(d time.Duration) Option {
	return func(o *options) { o.admit = append(o.admit, admit.WithReleaseTimeout(d)) }
}

// WithObserver sets the hook that receives admission events, such as a
// promadmit.Collector. The default is none.
func WithObserver(obs admit.Observer) Option {
	return func(o *options) { o.admit = append(o.admit, admit.WithObserver(obs)) }
}
