package httpmw

import (
	"context"

	"github.com/distsem/distsem/core/adaptive"
)

// outcomeContext returns the ctx to release a request's permit with: it
// tells an adaptive limit (core/adaptive) how the request ended. The
// middleware does not see the status code (it does not wrap the
// ResponseWriter), so a handler that panicked is Failed, a request whose
// ctx passed its deadline TimedOut, one whose client went away Ignored,
// and any other Success, with its handling time as the sample. Other
// semaphores ignore the value; a success adds nothing.
func outcomeContext(ctx context.Context, completed bool) context.Context {
	o := adaptive.Success
	switch {
	case !completed:
		o = adaptive.Failed
	case ctx.Err() != nil:
		o = adaptive.OutcomeOf(ctx.Err())
	default:
		return ctx
	}
	return adaptive.ContextWithOutcome(ctx, o)
}
