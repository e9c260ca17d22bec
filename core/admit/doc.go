// Package admit is the admission logic shared by the HTTP, gRPC and Echo
// adapters (httpmw, grpcmw, echomw): it maps a request's key to a permit of
// a keyed semaphore, bounds how long and how many requests may wait, sorts
// every failure into one of three rejection reasons, and reports what
// happens to an Observer.
//
// A Controller does the work:
//
//	sem := core.NewLocalKeyed(10, core.WithLimits(map[string]int64{"GET /slow": 2}))
//	ctl := admit.New(sem, admit.WithMaxWait(500*time.Millisecond))
//
//	t, err := ctl.Acquire(r.Context(), "GET /slow")
//	if err != nil {
//		rej := err.(*admit.Rejection) // NoCapacity, Unavailable or ClientGone
//		...
//	}
//	defer t.Release(r.Context())
//
// # One limit or one limit per key
//
// Controllers and adapters take a core.KeyedSemaphore. For per-route or
// per-method limits pass a *core.Keyed (core.NewLocalKeyed or
// redissem.NewKeyed, with redissem.WithLimits for overrides). For one limit
// shared by every key wrap a core.Semaphore with Global, which ignores the
// key; keys then still name the requests in observer events.
//
// # Waiting
//
// Acquire first tries to take a permit without waiting (one round trip with
// the Redis backend). If none is free and WithMaxWait allows waiting, it
// joins the semaphore's FIFO queue with a context.WithTimeout derived from
// the request's context, unless WithMaxWaiting requests of the same key are
// already waiting in this process: then it is rejected at once.
//
// It skips the try, and joins the queue at once, where the try is known to
// fail: another request of the same key is waiting in this process, with
// room for one more, and the request names no flow and holds no permit of
// the semaphore (a flow may be served before earlier waiters, and a nested
// acquire at once). It skips it too where the try makes no difference:
// with WaitForever, no bound on the waiters and no Observer, as in sqlmw's
// defaults. Either way a permit that is free is granted at once. So an
// unsaturated key costs exactly one acquire and one release script, and a
// saturated key one more only for its first waiter in each process.
//
// # One vocabulary
//
// httpmw, grpcmw, echomw and sqlmw take the same four settings, as With…
// options (echomw: Config fields of the same names), and each value means
// the same in all four. A zero value means "not set" (the default) for
// every setting but MaxWait, whose 0 is "never wait", itself the default
// of the request adapters; so a zero echomw.Config field and an omitted
// option agree, and the named constants express "none" and "forever".
//
//	setting         value                meaning
//	MaxWait         d > 0                wait up to d for a permit (the request's own deadline wins)
//	                0                    never wait: reject at once when no permit is free
//	                                     (the default, except in sqlmw)
//	                WaitForever          wait as long as the request's context allows
//	MaxWaiting      n > 0                at most n requests of one key wait in this process
//	                0                    not set: DefaultMaxWaiting (128); sqlmw: no bound
//	                NoWaiting            nobody waits: reject at once, whatever MaxWait says
//	ReleaseTimeout  d > 0                bound on the release round trip
//	                0                    DefaultReleaseTimeout (2s)
//	RetryAfter      d > 0                retry hint: HTTP Retry-After in whole seconds (rounded
//	                                     up), gRPC RetryInfo and grpc-retry-pushback-ms
//	                0                    DefaultRetryAfter (1s)
//	                NoRetryAfter         no hint
//
// Other negative values are rejected when the middleware is built (a panic,
// or echomw's Config.ToMiddleware error). The defaults differ in sqlmw
// only, where a query waits its turn: its MaxWait defaults to WaitForever
// (the request adapters: 0, fail fast and let the client retry) and its
// MaxWaiting to no bound (a waiting query holds a pool connection, so
// SetMaxOpenConns bounds them). sqlmw has no RetryAfter: a query has no
// client to hint. The table test in internal/adaptertest (a module of its
// own, so that the adapters' dependencies stay out of this one's) runs all
// four adapters through the same cases.
//
// # Outcomes
//
// Acquire returns a Ticket, or a *Rejection whose Reason says why:
//
//   - NoCapacity: no permit was free and the request could not wait, the
//     wait queue of its key was full, or WithMaxWait passed. The error
//     matches core.ErrNoPermit.
//   - Unavailable: the backend failed (under core.FailClosed) or the
//     semaphore was closed; the cause is wrapped.
//   - ClientGone: the request's own context ended first. No permit is held.
//
// Rejections carry the backend's error for logs; adapters never show its
// text to clients.
//
// # Release
//
// Ticket.Release gives the permit back with context.WithoutCancel of the
// request context plus WithReleaseTimeout, so a request cancelled by its
// client still releases its permit at once instead of leaking it until its
// lease expires. A permit without a lease (the in-process backend) is
// released with no round trip and no allocation.
package admit
