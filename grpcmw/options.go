package grpcmw

import (
	"context"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/distsem/distsem/core/admit"
)

// Option configures the interceptors.
type Option func(*options)

// RejectFunc returns the error for a rejected call. ctx is the call's
// context and fullMethod its method. rej.Err may hold backend details:
// log it, never return its text.
type RejectFunc func(ctx context.Context, fullMethod string, rej *admit.Rejection) error

type options struct {
	key        func(ctx context.Context, fullMethod string) string
	flow       func(ctx context.Context, fullMethod string) (string, int)
	reject     RejectFunc
	retryAfter time.Duration
	admit      []admit.Option
}

func defaultOptions() options {
	return options{key: defaultKey}
}

func defaultKey(_ context.Context, fullMethod string) string { return fullMethod }

// PushbackTrailer is the trailer key by which a server tells grpc-go's
// retry policy how long to wait before the next attempt (gRFC A6).
const PushbackTrailer = "grpc-retry-pushback-ms"

// Status messages of the default RejectFunc. They name no backend detail.
const (
	msgNoCapacity  = "distsem: concurrency limit reached, retry later"
	msgUnavailable = "distsem: concurrency limiter unavailable"
)

// rejecter is the default RejectFunc: its errors are built once, with a
// google.rpc.RetryInfo detail when there is a retry hint.
type rejecter struct {
	noCapacity, unavailable error
	pushback                string // PushbackTrailer value, "" for none
}

func newRejecter(hint time.Duration, ok bool) *rejecter {
	r := &rejecter{}
	mk := func(c codes.Code, msg string) error {
		st := status.New(c, msg)
		if ok {
			if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(hint)}); err == nil {
				st = d
			}
		}
		return st.Err()
	}
	r.noCapacity = mk(codes.ResourceExhausted, msgNoCapacity)
	r.unavailable = mk(codes.Unavailable, msgUnavailable)
	if ok {
		r.pushback = strconv.FormatInt(int64((hint+time.Millisecond-1)/time.Millisecond), 10)
	}
	return r
}

func (r *rejecter) reject(ctx context.Context, _ string, rej *admit.Rejection) error {
	if rej.Reason == admit.ClientGone {
		return status.FromContextError(ctx.Err()).Err()
	}
	if r.pushback != "" {
		// Only a server-side ctx carries a stream to set trailers on; on
		// the client side this fails and the RetryInfo detail remains.
		_ = grpc.SetTrailer(ctx, metadata.Pairs(PushbackTrailer, r.pushback))
	}
	if rej.Reason == admit.NoCapacity {
		return r.noCapacity
	}
	return r.unavailable
}

// WithKey sets the function that maps a call to its semaphore key. The
// default is the full method name.
func WithKey(f func(ctx context.Context, fullMethod string) string) Option {
	return func(o *options) { o.key = f }
}

// WithFlow sets the function that names a call's flow (a tenant, an API
// key) and priority level (0 is the highest), for a semaphore with flows
// (see core.WithFlow). A server interceptor's ctx holds the call's
// incoming metadata (metadata.FromIncomingContext), a client
// interceptor's its outgoing metadata. A server handler's ctx carries the
// flow too (core.ContextWithFlow). The default (nil) names no flow. A
// semaphore without flows refuses a flow, and the call fails with
// Unavailable.
func WithFlow(f func(ctx context.Context, fullMethod string) (flow string, level int)) Option {
	return func(o *options) { o.flow = f }
}

// WithRejectHandler sets the function that builds the error of a rejected
// call. The default returns ResourceExhausted for no capacity and
// Unavailable for a backend failure, both with the WithRetryAfter hint,
// and status.FromContextError when the caller's context ended.
func WithRejectHandler(f RejectFunc) Option { return func(o *options) { o.reject = f } }

// WithRetryAfter sets the retry hint of the default RejectFunc's
// ResourceExhausted and Unavailable errors: a google.rpc.RetryInfo status
// detail with this delay and, on the server side, the PushbackTrailer
// trailer in milliseconds (rounded up), which grpc-go clients with a retry
// policy for that code honour instead of their own backoff. 0 means
// admit.DefaultRetryAfter (1s), the default; admit.NoRetryAfter sends
// neither.
func WithRetryAfter(d time.Duration) Option { return func(o *options) { o.retryAfter = d } }

// WithMaxWait sets how long a call may wait for a permit; see
// admit.WithMaxWait: 0 rejects at once when none is free (the default),
// admit.WaitForever waits as long as the call's context allows.
func WithMaxWait(d time.Duration) Option {
	return func(o *options) { o.admit = append(o.admit, admit.WithMaxWait(d)) }
}

// WithMaxWaiting bounds how many calls of one key may wait in this
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
