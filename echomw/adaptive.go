package echomw

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/distsem/distsem/core/adaptive"
)

// outcomeContext returns the ctx to release a request's permit with: it
// tells an adaptive limit (core/adaptive) how the request ended, err
// being the handler's error. A panic, an error that Echo renders with a
// 5xx status (an *echo.HTTPError of 500 or more, or any other error) or a
// 5xx status already written is Failed, but 504 Gateway Timeout is
// TimedOut; a request whose client went away is Ignored; a 4xx is the
// client's mistake and counts as Success. Other semaphores ignore the
// value; a success adds nothing.
func outcomeContext(ctx context.Context, c echo.Context, err error, completed bool) context.Context {
	code := c.Response().Status
	if err != nil {
		code = http.StatusInternalServerError
		var he *echo.HTTPError
		if errors.As(err, &he) {
			code = he.Code
		}
	}
	o := adaptive.Success
	switch {
	case !completed:
		o = adaptive.Failed
	case ctx.Err() != nil:
		o = adaptive.OutcomeOf(ctx.Err())
	case code == http.StatusGatewayTimeout:
		o = adaptive.TimedOut
	case code >= 500:
		o = adaptive.Failed
	default:
		return ctx
	}
	return adaptive.ContextWithOutcome(ctx, o)
}
