package echomw

import (
	"errors"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
)

// Config configures the middleware. Zero fields take their value from
// DefaultConfig.
type Config struct {
	// Skipper defines a function to skip the middleware.
	Skipper middleware.Skipper
	// BeforeFunc runs before the request is admitted.
	BeforeFunc middleware.BeforeFunc

	// Semaphore gives the permits. Required.
	Semaphore core.KeyedSemaphore
	// KeyExtractor returns the semaphore key of a request. The default is
	// the route path, c.Path().
	KeyExtractor middleware.Extractor

	// MaxWait is how long a request may wait for a permit; see
	// admit.WithMaxWait. The default is 0: reject at once when none is free.
	MaxWait time.Duration
	// MaxWaiting bounds how many requests of one key may wait in this
	// process; see admit.WithMaxWaiting. The default is 128.
	MaxWaiting int
	// ReleaseTimeout bounds the backend round trip of a release; see
	// admit.WithReleaseTimeout. The default is 2s.
	ReleaseTimeout time.Duration
	// Observer receives admission events, such as a promadmit.Collector.
	// The default is none.
	Observer admit.Observer
	// RetryAfter is the Retry-After header the default handlers set on 429
	// and 503, rounded up to whole seconds. The default is 1s; a negative
	// value sends none.
	RetryAfter time.Duration

	// ErrorHandler returns the error for a request that was rejected for
	// any reason but capacity: err is a *admit.Rejection (Unavailable or
	// ClientGone), or the KeyExtractor's error.
	ErrorHandler func(c echo.Context, err error) error
	// DenyHandler returns the error for a request that found no capacity;
	// identifier is its key and err a *admit.Rejection.
	DenyHandler func(c echo.Context, identifier string, err error) error
}

// DefaultConfig is the default configuration. Its handlers set Retry-After
// to one second.
var DefaultConfig = Config{
	Skipper:        middleware.DefaultSkipper,
	KeyExtractor:   func(c echo.Context) (string, error) { return c.Path(), nil },
	MaxWaiting:     128,
	ReleaseTimeout: 2 * time.Second,
	RetryAfter:     time.Second,
}

// deny and fail are the default handlers of a Config whose Retry-After
// header value is retry ("" for none).
func deny(retry string) func(echo.Context, string, error) error {
	return func(c echo.Context, _ string, err error) error {
		setRetryAfter(c, retry)
		return echo.ErrTooManyRequests.WithInternal(err)
	}
}

func fail(retry string) func(echo.Context, error) error {
	return func(c echo.Context, err error) error {
		var rej *admit.Rejection
		switch {
		case !errors.As(err, &rej):
			return middleware.ErrExtractorError.WithInternal(err)
		case rej.Reason == admit.ClientGone:
			return echo.NewHTTPError(middleware.StatusCodeContextCanceled,
				"client closed connection").WithInternal(err)
		}
		setRetryAfter(c, retry)
		return echo.ErrServiceUnavailable.WithInternal(err)
	}
}

func setRetryAfter(c echo.Context, v string) {
	if v != "" {
		c.Response().Header().Set("Retry-After", v)
	}
}

// retryAfter formats d in whole seconds, rounded up; "" for d <= 0.
func retryAfter(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}
