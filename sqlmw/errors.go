package sqlmw

import (
	"context"
	"errors"

	"github.com/distsem/distsem/core"
)

// Error is returned when a query could not get its permit. Its message is
// fixed and safe to show to anyone; Unwrap returns the cause from core, so
// errors.Is matches core.ErrNoPermit (the wait ran out),
// context.Canceled, core.ErrUnavailable (the backend failed and the
// semaphore's failure policy is FailClosed) or core.ErrClosed.
type Error struct {
	msg string
	err error
}

func newError(err error) *Error {
	msg := "sqlmw: no permit to run the query"
	switch {
	case errors.Is(err, context.Canceled):
		msg = "sqlmw: query cancelled while waiting for a permit"
	case errors.Is(err, core.ErrNoPermit):
		msg = "sqlmw: no permit to run the query: the wait ran out"
	case errors.Is(err, core.ErrUnavailable):
		msg = "sqlmw: the concurrency limiter is unavailable"
	case errors.Is(err, core.ErrClosed):
		msg = "sqlmw: the concurrency limiter is closed"
	}
	return &Error{msg: msg, err: err}
}

func (e *Error) Error() string { return e.msg }

// Unwrap returns the cause, for errors.Is and for logs.
func (e *Error) Unwrap() error { return e.err }
