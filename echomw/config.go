package echomw

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
)

// Config configures the middleware. A zero field means "not set" and takes
// its value from DefaultConfig; the values mean what they mean in every
// distsem adapter (see "One vocabulary" in package admit).
type Config struct {
	// Skipper defines a function to skip the middleware.
	Skipper middleware.Skipper
	// BeforeFunc runs before the request is admitted.
	BeforeFunc middleware.BeforeFunc

	// Semaphore gives the permits. Required.
	Semaphore core.KeyedSemaphore
	// KeyExtractor returns the semaphore key of a request. The default is
	// RouteKey, "METHOD /route/{param}" like httpmw. An extractor that
	// returns ErrUnrouted lets the request through without a permit.
	KeyExtractor middleware.Extractor
	// Flow names a request's flow (a tenant, an API key) and priority
	// level (0 is the highest), for a semaphore with flows (see
	// core.WithFlow); the handler's ctx carries them too
	// (core.ContextWithFlow). The default (nil) names no flow. A semaphore
	// without flows refuses a flow, and the request gets ErrorHandler.
	Flow func(c echo.Context) (flow string, level int)

	// MaxWait is how long a request may wait for a permit; see
	// admit.WithMaxWait: 0 rejects at once when none is free (the
	// default), admit.WaitForever waits as long as the request's context
	// allows.
	MaxWait time.Duration
	// MaxWaiting bounds how many requests of one key may wait in this
	// process; see admit.WithMaxWaiting: 0 means admit.DefaultMaxWaiting
	// (128), admit.NoWaiting lets none wait.
	MaxWaiting int
	// ReleaseTimeout bounds the backend round trip of a release; see
	// admit.WithReleaseTimeout: 0 means admit.DefaultReleaseTimeout (2s).
	ReleaseTimeout time.Duration
	// Observer receives admission events, such as a promadmit.Collector.
	// The default is none.
	Observer admit.Observer
	// RetryAfter is the Retry-After header the default handlers set on 429
	// and 503, rounded up to whole seconds: 0 means
	// admit.DefaultRetryAfter (1s), admit.NoRetryAfter sends none.
	RetryAfter time.Duration

	// ErrorHandler returns the error for a request that was rejected for
	// any reason but capacity: err is a *admit.Rejection (Unavailable or
	// ClientGone), or the KeyExtractor's error. It must not put err into
	// the returned error (not even as an HTTPError's Internal: Echo shows
	// that to clients when e.Debug is set); the middleware keeps err for
	// logs, see Cause.
	ErrorHandler func(c echo.Context, err error) error
	// DenyHandler returns the error for a request that found no capacity;
	// identifier is its key and err a *admit.Rejection. The same rule as
	// for ErrorHandler applies to err.
	DenyHandler func(c echo.Context, identifier string, err error) error
}

// DefaultConfig is the default configuration.
var DefaultConfig = Config{
	Skipper:      middleware.DefaultSkipper,
	KeyExtractor: RouteKey,
}

// ErrUnrouted is returned by RouteKey for a request that matched no route
// (Echo answers 404 or 405 itself): the middleware lets it through without
// a permit, so client-invented paths and methods create no keys.
var ErrUnrouted = errors.New("echomw: no route matched")

// RouteKey is the default KeyExtractor: the request's method and route
// path, with Echo's ":name" parameters written as net/http's "{name}", so
// that an Echo route and the same net/http ServeMux pattern share one key
// in a mixed fleet: e.GET("/users/:id", …) is keyed "GET /users/{id}", as
// httpmw keys mux.Handle("GET /users/{id}", …). GET and POST on one path
// are two keys. Echo's "*" wildcard is kept as is. It returns ErrUnrouted
// when no route matched.
func RouteKey(c echo.Context) (string, error) {
	path := c.Path()
	if path == "" || c.Get(echo.ContextKeyHeaderAllow) != nil {
		return "", ErrUnrouted
	}
	method := c.Request().Method
	rk := routeKey{method, path}
	if k, ok := routeKeys.Load(rk); ok {
		return k.(string), nil
	}
	k := formatRouteKey(method, path)
	if routeKeysLen.Add(1) <= maxRouteKeys {
		routeKeys.Store(rk, k)
	}
	return k, nil
}

// routeKeys caches RouteKey's keys, so that a request costs no allocation.
// Its keys are matched routes and their methods, a set the application
// fixes; it stops growing at maxRouteKeys all the same.
var (
	routeKeys    sync.Map // routeKey → string
	routeKeysLen atomic.Int64
)

const maxRouteKeys = 4096

type routeKey struct{ method, path string }

func formatRouteKey(method, path string) string {
	if !strings.Contains(path, ":") {
		return method + " " + path
	}
	var b strings.Builder
	b.Grow(len(method) + len(path) + 8)
	b.WriteString(method)
	b.WriteByte(' ')
	for i, seg := range strings.Split(path, "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		if name, ok := strings.CutPrefix(seg, ":"); ok {
			b.WriteString("{" + name + "}")
		} else {
			b.WriteString(seg)
		}
	}
	return b.String()
}

// causeKey is the echo.Context key under which the middleware keeps the
// cause of a rejection.
const causeKey = "distsem.cause"

// Cause returns the internal cause of the request's rejection by this
// middleware (a *admit.Rejection, or the KeyExtractor's error), or nil.
// The error returned to Echo never carries it, so that no mode of Echo's
// error handler (e.Debug included) shows it to the client; log it from
// your HTTPErrorHandler or request logger instead:
//
//	middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
//		LogStatus: true, LogURI: true,
//		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
//			if err := echomw.Cause(c); err != nil {
//				log.Printf("%s %d: %v", v.URI, v.Status, err)
//			}
//			return nil
//		},
//	})
func Cause(c echo.Context) error {
	err, _ := c.Get(causeKey).(error)
	return err
}

// deny and fail are the default handlers of a Config whose Retry-After
// header value is retry ("" for none). Their errors carry no internal
// cause.
func deny(retry string) func(echo.Context, string, error) error {
	return func(c echo.Context, _ string, _ error) error {
		setRetryAfter(c, retry)
		return echo.NewHTTPError(http.StatusTooManyRequests)
	}
}

func fail(retry string) func(echo.Context, error) error {
	return func(c echo.Context, err error) error {
		var rej *admit.Rejection
		switch {
		case !errors.As(err, &rej):
			return echo.NewHTTPError(middleware.ErrExtractorError.Code, middleware.ErrExtractorError.Message)
		case rej.Reason == admit.ClientGone:
			return echo.NewHTTPError(middleware.StatusCodeContextCanceled, "client closed connection")
		}
		setRetryAfter(c, retry)
		return echo.NewHTTPError(http.StatusServiceUnavailable)
	}
}

func setRetryAfter(c echo.Context, v string) {
	if v != "" {
		c.Response().Header().Set("Retry-After", v)
	}
}

// retryAfter resolves a RetryAfter value to a header value in whole
// seconds, rounded up; "" for none.
func retryAfter(d time.Duration) (string, error) {
	hint, ok, err := admit.RetryAfter(d)
	if err != nil || !ok {
		return "", err
	}
	return strconv.FormatInt(int64((hint+time.Second-1)/time.Second), 10), nil
}
