package echomw

import (
	"errors"
	"fmt"

	"github.com/labstack/echo/v4"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
)

/*
Limit returns a middleware that runs a route's handler only while the
request holds a permit of sem for its route, with DefaultConfig.

	e := echo.New()
	sem := core.NewLocalKeyed(16, core.WithLimits(map[string]int64{"GET /work": 4}))
	e.GET("/work", work, echomw.Limit(sem))
*/
func Limit(sem core.KeyedSemaphore) echo.MiddlewareFunc {
	c := DefaultConfig
	c.Semaphore = sem
	return LimitWithConfig(c)
}

/*
LimitWithConfig returns the middleware configured by config. It panics if
config is invalid; see Config.ToMiddleware.

	e.Use(echomw.LimitWithConfig(echomw.Config{
		Semaphore: sem,
		MaxWait:   200 * time.Millisecond,
		DenyHandler: func(c echo.Context, key string, err error) error {
			return echo.ErrServiceUnavailable // 503, not 429
		},
	}))
*/
func LimitWithConfig(config Config) echo.MiddlewareFunc {
	mw, err := config.ToMiddleware()
	if err != nil {
		panic(err)
	}
	return mw
}

// ToMiddleware converts config to a middleware, or returns an error if
// Semaphore is nil or a value is out of range (see Config).
func (config Config) ToMiddleware() (echo.MiddlewareFunc, error) {
	if config.Semaphore == nil {
		return nil, errors.New("echomw: Config.Semaphore must be provided")
	}
	d := DefaultConfig
	if config.Skipper == nil {
		config.Skipper = d.Skipper
	}
	if config.KeyExtractor == nil {
		config.KeyExtractor = d.KeyExtractor
	}
	retry, err := retryAfter(config.RetryAfter)
	if err != nil {
		return nil, fmt.Errorf("echomw: %w", err)
	}
	if config.DenyHandler == nil {
		config.DenyHandler = deny(retry)
	}
	if config.ErrorHandler == nil {
		config.ErrorHandler = fail(retry)
	}
	opts := []admit.Option{admit.WithMaxWait(config.MaxWait), admit.WithMaxWaiting(config.MaxWaiting),
		admit.WithReleaseTimeout(config.ReleaseTimeout), admit.WithObserver(config.Observer)}
	if config.Observer == nil {
		opts = opts[:3]
	}
	ctl, err := newController(config.Semaphore, opts)
	if err != nil {
		return nil, fmt.Errorf("echomw: %w", err)
	}

	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) (err error) {
			if config.Skipper(c) {
				return next(c)
			}
			if config.BeforeFunc != nil {
				config.BeforeFunc(c)
			}
			key, err := config.KeyExtractor(c)
			if errors.Is(err, ErrUnrouted) {
				return next(c) // Echo's own 404 or 405: no permit, no key
			}
			if err != nil {
				c.Set(causeKey, err)
				return config.ErrorHandler(c, err)
			}
			ctx := c.Request().Context()
			if config.Flow != nil {
				flow, level := config.Flow(c)
				ctx = core.ContextWithFlow(ctx, flow, level)
			}
			t, err := ctl.Acquire(ctx, key)
			if err != nil {
				c.Set(causeKey, err)
				if err.(*admit.Rejection).Reason == admit.NoCapacity {
					return config.DenyHandler(c, key, err)
				}
				return config.ErrorHandler(c, err)
			}
			completed := false
			defer func() { t.Release(outcomeContext(ctx, c, err, completed)) }()
			// As in httpmw: the permit reaches the handler only in its
			// request's ctx (for core.PermitFromContext and a reentrant
			// Acquire), which takes a copy of the request.
			c.SetRequest(c.Request().WithContext(t.Context(ctx)))
			err = next(c)
			completed = true
			return err
		}
	}, nil
}

// newController is admit.New with its panic on a bad option turned into
// an error.
func newController(sem core.KeyedSemaphore, opts []admit.Option) (ctl *admit.Controller, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return admit.New(sem, opts...), nil
}
