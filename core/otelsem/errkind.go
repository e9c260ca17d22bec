package otelsem

import (
	"context"
	"errors"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/internal/errkind"
)

// errorKind sorts a backend error as promsem.ErrorKind does: "timeout",
// "network", "server" (an error reply from Redis), "closed" or "other".
func errorKind(err error) string { return errkind.Of(err) }

// abandonKind says why a wait was abandoned: "closed" (the semaphore was
// closed), "deadline_exceeded" (the caller's deadline passed: no permit in
// time), "canceled" (the caller's ctx was cancelled), "unavailable" (the
// backend failed) or "other". ctx is the caller's: once it has ended,
// that is why the wait ended, whatever error the backend gave.
func abandonKind(ctx context.Context, err error) string {
	switch {
	case errors.Is(err, core.ErrClosed):
		return "closed"
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "deadline_exceeded"
	case ctx.Err() != nil:
		return "canceled"
	case errors.Is(err, core.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, core.ErrNoPermit), errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "other"
}
