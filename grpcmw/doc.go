// Package grpcmw limits how many gRPC calls run at once, per method, across
// every process that shares the semaphore. Server interceptors isolate the
// methods of a server from one another; client interceptors are a
// client-side bulkhead that caps outbound calls to a downstream service.
//
// The four constructors follow go-grpc-middleware's names:
//
//	limits := map[string]int64{"/shop.Cart/Checkout": 4}
//	sem := redissem.NewKeyed(rdb, "cart", 32, redissem.WithLimits(limits))
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(grpcmw.UnaryServerInterceptor(sem)),
//		grpc.ChainStreamInterceptor(grpcmw.StreamServerInterceptor(sem)),
//	)
//
// The key of a call is its full method name ("/package.Service/Method");
// WithKey changes it. For one limit over every method, pass
// admit.Global(sem) with a core.Semaphore. To limit only some methods, use
// go-grpc-middleware's selector interceptor around these. What the
// semaphore itself guarantees (FIFO, leases, the failure policy) is in
// https://github.com/distsem/distsem/blob/main/docs/GUARANTEES.md.
//
// # When the permit is released
//
//   - Server, unary: when the handler returns (also if it panics).
//   - Server, stream: when the stream handler returns: the permit is held
//     for the stream's lifetime.
//   - Client, unary: when the invoker returns.
//   - Client, stream: once, when the stream ends by grpc-go's
//     ClientConn.NewStream rules: RecvMsg returns a non-nil error (io.EOF
//     included), or returns the single response of a call without server
//     streaming; SendMsg or Header returns a non-nil error other than
//     io.EOF; or the call's context ends (context.AfterFunc). A stream
//     abandoned without any of these, whose context never ends, keeps its
//     permit (and, per grpc-go, leaks a goroutine too). Closing the
//     ClientConn is not seen: cancel the stream's context.
//
// # Rejections
//
//   - no capacity: codes.ResourceExhausted;
//   - backend unavailable (core.FailClosed) or semaphore closed:
//     codes.Unavailable;
//   - the caller's context ended: status.FromContextError (Canceled or
//     DeadlineExceeded).
//
// The first two carry a retry hint, the gRPC twin of HTTP's Retry-After
// (WithRetryAfter, 1s by default): a google.rpc.RetryInfo status detail
// and, from the server interceptors, the grpc-retry-pushback-ms trailer of
// gRFC A6. A grpc-go client whose service config has a retryPolicy with
// that status code in retryableStatusCodes waits the pushback before its
// next attempt instead of its own backoff:
//
//	{"methodConfig": [{"name": [{"service": "shop.Cart"}], "retryPolicy": {
//	  "maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
//	  "backoffMultiplier": 2, "retryableStatusCodes": ["RESOURCE_EXHAUSTED"]}}]}
//
// Status messages never carry the backend's error text; WithRejectHandler
// builds other errors.
package grpcmw
