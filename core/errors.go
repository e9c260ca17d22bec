package core

import (
	"context"
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by this package matches at most one
// of them (or context.Canceled) with errors.Is: see "Errors" in the package
// documentation. ErrNotHeld is a Release of a permit whose lease had
// already ended; ErrInvalidArgument a bad weight, TTL, limit, name or text.
var (
	ErrNoPermit        = errors.New("core: no permit available")
	ErrUnavailable     = errors.New("core: backend unavailable")
	ErrInvalidArgument = errors.New("core: invalid argument")
	ErrNotHeld         = errors.New("core: permit not held (lease expired or unknown)")
	ErrClosed          = errors.New("core: semaphore closed")
)

// ctxError converts the end of a wait into the package's error contract:
// a passed deadline means "no permit" (and still matches
// context.DeadlineExceeded); a cancellation wraps context.Canceled. Both
// wrap ctx.Err(), so they match the context sentinels even when the ctx
// carries a cause (context.WithCancelCause, WithTimeoutCause); the cause,
// when there is one, is wrapped too and named in the message.
func ctxError(ctx context.Context, name string) error {
	err := ctx.Err()
	if err == nil { // not ended: a caller bug, but never a nil error
		err = context.Canceled
	}
	cause := context.Cause(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		if cause == nil || cause == err {
			return fmt.Errorf("%w: %q: wait ended: %w", ErrNoPermit, name, err)
		}
		return fmt.Errorf("%w: %q: wait ended: %w (cause: %w)", ErrNoPermit, name, err, cause)
	}
	if cause == nil || cause == err {
		return fmt.Errorf("core: acquire %q: %w", name, err)
	}
	return fmt.Errorf("core: acquire %q: %w (cause: %w)", name, err, cause)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}
