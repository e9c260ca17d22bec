package grpcmw

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/distsem/distsem/core/adaptive"
)

// outcomeContext returns the ctx to release a call's permit with: it tells
// an adaptive limit (core/adaptive) how the call ended, err being the
// handler's (or invoker's) error. A panic is Failed; DeadlineExceeded is
// TimedOut; Canceled is Ignored; Unknown, Internal, Unavailable,
// ResourceExhausted, Aborted and DataLoss (and an error without a status,
// as adaptive.OutcomeOf sorts it) are Failed; every other code is the
// caller's mistake, not the resource's trouble, and counts as Success.
// Other semaphores ignore the value; a success adds nothing.
func outcomeContext(ctx context.Context, err error, completed bool) context.Context {
	o := adaptive.Success
	if !completed {
		o = adaptive.Failed
	} else if err != nil {
		st, ok := status.FromError(err)
		if !ok {
			o = adaptive.OutcomeOf(err)
		} else {
			switch st.Code() {
			case codes.DeadlineExceeded:
				o = adaptive.TimedOut
			case codes.Canceled:
				o = adaptive.Ignored
			case codes.Unknown, codes.Internal, codes.Unavailable, codes.ResourceExhausted, codes.Aborted, codes.DataLoss:
				o = adaptive.Failed
			}
		}
	}
	if o == adaptive.Success {
		return ctx
	}
	return adaptive.ContextWithOutcome(ctx, o)
}
