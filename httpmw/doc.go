// Package httpmw limits how many requests a net/http handler runs at once,
// per route, across every process that shares the semaphore.
//
// Limit returns a func(http.Handler) http.Handler, the shape chi, gorilla
// and plain ServeMux code compose; Handler wraps one handler in the style
// of http.TimeoutHandler:
//
//	limits := map[string]int64{"GET /work": 8, "GET /report": 2}
//	sem := redissem.NewKeyed(rdb, "gateway", 64, redissem.WithLimits(limits))
//	limit := httpmw.Limit(sem, httpmw.WithMaxWait(200*time.Millisecond))
//
//	mux := http.NewServeMux()
//	mux.Handle("GET /work", limit(work))
//	mux.Handle("GET /report", limit(report))
//
// The key of a request is its ServeMux route pattern ("GET /work"), so
// every route has its own limit and keys stay bounded whatever paths
// clients send. Both placements work:
//
//   - around a handler registered on a ServeMux, as above: the key is
//     Request.Pattern;
//   - around the *http.ServeMux itself, httpmw.Limit(sem)(mux): the
//     middleware resolves the pattern first with mux.Handler(r), also when
//     that mux is mounted on another one (r.Pattern then names the outer
//     route and is not used). A request no route matches (the mux answers
//     404, 405 or a redirect) takes no permit and creates no key.
//
// A request with no pattern through a middleware that wraps something
// other than a ServeMux (a chi router, a single handler) gets UnroutedKey:
// one shared limit. WithKey sets another key function (for chi, its route
// pattern); never key by the raw URL path, which the client chooses. A
// keyed semaphore also keeps only a bounded number of idle keys
// (core.WithMaxIdleKeys), and promadmit labels only the keys it is told.
//
// For one limit over every route, pass admit.Global(sem) with a
// core.Semaphore. Wrap only the handlers that need a limit, as above, so
// that health checks and /metrics never wait on the semaphore's backend.
// What the semaphore itself guarantees (FIFO, leases, the failure policy)
// is in https://github.com/distsem/distsem/blob/main/docs/GUARANTEES.md.
//
// # Responses
//
// A request that gets a permit runs the handler, and the permit is released
// when the handler returns, or panics (the panic then goes on). The
// ResponseWriter is passed through unchanged, so Flusher, Hijacker and
// http.ResponseController keep working.
//
// A rejected request never reaches the handler:
//
//   - no capacity: 429 Too Many Requests (WithStatus sets another, such as
//     503) with a Retry-After header (WithRetryAfter);
//   - backend unavailable (core.FailClosed) or semaphore closed: 503
//     Service Unavailable with Retry-After;
//   - the client went away while waiting: nothing is written.
//
// The body is the status text; the backend's error text is never written.
// WithRejectHandler renders rejections differently, for example as JSON.
package httpmw
