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
	sem := core.NewLocalKeyed(16, core.WithLimits(map[string]int64{"/work": 4}))
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
			return echo.ErrServiceUnavailable.WithInternal(err) // 503, not 429
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
// Semaphore is nil or MaxWait, MaxWaiting or ReleaseTimeout is negative.
func (config Config) ToMiddleware() (echo.MiddlewareFunc, error) {
	switch {
	case config.Semaphore == nil:
		return nil, errors.New("echomw: Config.Semaphore must be provided")
	case config.MaxWait < 0 || config.MaxWaiting < 0 || config.ReleaseTimeout < 0:
		return nil, fmt.Errorf("echomw: negative MaxWait (%v), MaxWaiting (%d) or ReleaseTimeout (%v)",
			config.MaxWait, config.MaxWaiting, config.ReleaseTimeout)
	}
	d := DefaultConfig
	if config.Skipper == nil {
		config.Skipper = d.Skipper
	}
	if config.KeyExtractor == nil {
		config.KeyExtractor = d.KeyExtractor
	}
	if config.MaxWaiting == 0 {
		config.MaxWaiting = d.MaxWaiting
	}
	if config.ReleaseTimeout == 0 {
		config.ReleaseTimeout = d.ReleaseTimeout
	}
	if config.RetryAfter == 0 {
		config.RetryAfter = d.RetryAfter
	}
	retry := retryAfter(config.RetryAfter)
	if config.DenyHandler == nil {
		config.DenyHandler = deny(retry)
	}
	if config.ErrorHandler == nil {
		config.ErrorHandler = fail(retry)
	}
	opts := []admit.Option{admit.WithMaxWait(config.MaxWait), admit.WithMaxWaiting(config.MaxWaiting),
		admit.WithReleaseTimeout(config.ReleaseTimeout)}
	if config.Observer != nil {
		opts = append(opts, admit.WithObserver(config.Observer))
	}
	ctl := admit.New(config.Semaphore, opts...)

	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if config.Skipper(c) {
				return next(c)
			}
			if config.BeforeFunc != nil {
				config.BeforeFunc(c)
			}
			key, err := config.KeyExtractor(c)
			if err != nil {
				return config.ErrorHandler(c, err)
			}
			ctx := c.Request().Context()
			t, err := ctl.Acquire(ctx, key)
			if err != nil {
				if err.(*admit.Rejection).Reason == admit.NoCapacity {
					return config.DenyHandler(c, key, err)
				}
				return config.ErrorHandler(c, err)
			}
			defer t.Release(ctx)
			c.SetRequest(c.Request().WithContext(t.Context(ctx))) // handlers can reenter
			return next(c)
		}
	}, nil
}
