// Package echomw is an Echo v4 middleware that limits how many requests a
// route runs at once, across every process that shares the semaphore. It
// follows the conventions of Echo's own middleware package: a Config with
// a Skipper, DefaultConfig, Limit, LimitWithConfig (which panics on a bad
// Config) and Config.ToMiddleware; rejections are returned as
// *echo.HTTPError for the Echo HTTPErrorHandler to render.
//
//	limits := map[string]int64{"GET /work": 8, "GET /report/{id}": 2}
//	sem := redissem.NewKeyed(rdb, "api", 64, redissem.WithLimits(limits))
//	e := echo.New()
//	e.Use(echomw.LimitWithConfig(echomw.Config{
//		Semaphore: sem,
//		MaxWait:   200 * time.Millisecond,
//	}))
//
// The key of a request is its method and route (RouteKey): e.GET("/work")
// is "GET /work" and e.GET("/report/:id") is "GET /report/{id}", exactly
// the keys httpmw gives the ServeMux patterns "GET /work" and
// "GET /report/{id}", so Echo and net/http services sharing one Redis
// share their limits; GET and POST on one path have a limit each. Keys
// come from the routes, never from the client's path, so they stay
// bounded; a request that matches no route (Echo's 404 or 405) takes no
// permit. KeyExtractor changes the key. For one limit over every route,
// use admit.Global(sem) with a core.Semaphore. Unlike net/http, Echo knows
// the route before the middleware runs, so the middleware may be
// installed with e.Use. A Skipper keeps health checks and /metrics from
// waiting on the semaphore's backend. What the semaphore itself guarantees
// (FIFO, leases, the failure policy) is in
// https://github.com/distsem/distsem/blob/main/docs/GUARANTEES.md.
//
// A rejected request never reaches the handler. The default handlers
// return:
//
//   - no capacity (DenyHandler): echo.ErrTooManyRequests with a
//     Retry-After header; return echo.ErrServiceUnavailable from your own
//     DenyHandler for a 503;
//   - backend unavailable or semaphore closed (ErrorHandler):
//     echo.ErrServiceUnavailable with a Retry-After header;
//   - the client went away (ErrorHandler): status 499
//     (middleware.StatusCodeContextCanceled), as Echo's proxy middleware
//     does; there is no client left to read it;
//   - a KeyExtractor error (ErrorHandler): 403, as Echo's rate limiter
//     does.
//
// The returned errors carry no internal cause, so Echo never shows
// backend details to a client, also with e.Debug set (whose error handler
// writes err.Error(), Internal included). The cause is kept on the
// request's context for logs: see Cause.
//
// The permit is released when the handler returns, also when it panics
// (the panic goes on, for Echo's Recover middleware).
package echomw
