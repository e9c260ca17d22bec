package sqlmw

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/distsem/distsem/core/adaptive"
)

// withOutcome returns the ctx to release a query's permit with: it tells
// an adaptive limit (core/adaptive) how the query ended, by
// adaptive.OutcomeOf (a passed deadline TimedOut, a cancellation Ignored,
// any other error Failed); driver.ErrSkip, a query the driver did not run,
// is Ignored. A query that succeeded adds nothing: the permit's hold time
// is its sample. Other semaphores ignore the value.
func withOutcome(ctx context.Context, err error) context.Context {
	switch {
	case err == nil:
		return ctx
	case errors.Is(err, driver.ErrSkip):
		return adaptive.ContextWithOutcome(ctx, adaptive.Ignored)
	}
	return adaptive.ContextWithOutcome(ctx, adaptive.OutcomeOf(err))
}
