package grpcmw

import (
	"context"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
)

type limiter struct {
	ctl *admit.Controller
	o   options
}

func newLimiter(sem core.KeyedSemaphore, opts []Option) *limiter {
	o := defaultOptions()
	for _, f := range opts {
		f(&o)
	}
	hint, ok, err := admit.RetryAfter(o.retryAfter)
	if err != nil {
		panic("grpcmw: " + err.Error())
	}
	if o.reject == nil {
		o.reject = newRejecter(hint, ok).reject
	}
	return &limiter{ctl: admit.New(sem, o.admit...), o: o}
}

// acquire admits a call, and returns ctx with the call's flow (WithFlow).
func (l *limiter) acquire(ctx context.Context, method string) (context.Context, admit.Ticket, error) {
	if l.o.flow != nil {
		flow, level := l.o.flow(ctx, method)
		ctx = core.ContextWithFlow(ctx, flow, level)
	}
	t, err := l.ctl.Acquire(ctx, l.o.key(ctx, method))
	if err != nil {
		return ctx, t, l.o.reject(ctx, method, err.(*admit.Rejection))
	}
	return ctx, t, nil
}

// UnaryServerInterceptor returns a server interceptor that runs a unary
// handler only while the call holds a permit of sem for its key. It panics
// if sem is nil or an option is out of range.
func UnaryServerInterceptor(sem core.KeyedSemaphore, opts ...Option) grpc.UnaryServerInterceptor {
	l := newLimiter(sem, opts)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (_ any, err error) {
		ctx, t, err := l.acquire(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		completed := false
		defer func() { t.Release(outcomeContext(ctx, err, completed)) }()
		resp, err := handler(t.Context(ctx), req) // handlers can reenter
		completed = true
		return resp, err
	}
}

// StreamServerInterceptor returns a server interceptor that runs a stream
// handler only while the stream holds a permit of sem for its key, which it
// keeps until the handler returns. It panics if sem is nil or an option is
// out of range.
func StreamServerInterceptor(sem core.KeyedSemaphore, opts ...Option) grpc.StreamServerInterceptor {
	l := newLimiter(sem, opts)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		ctx := ss.Context()
		ctx, t, err := l.acquire(ctx, info.FullMethod)
		if err != nil {
			return err
		}
		completed := false
		defer func() { t.Release(outcomeContext(ctx, err, completed)) }()
		err = handler(srv, permitStream{ss, t.Context(ctx)}) // handlers can reenter
		completed = true
		return err
	}
}

// permitStream is a server stream whose Context holds the call's permit.
type permitStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s permitStream) Context() context.Context { return s.ctx }

// UnaryClientInterceptor returns a client interceptor that sends a unary
// call only while it holds a permit of sem for its key. It panics if sem is
// nil or an option is out of range.
func UnaryClientInterceptor(sem core.KeyedSemaphore, opts ...Option) grpc.UnaryClientInterceptor {
	l := newLimiter(sem, opts)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) (err error) {
		ctx, t, err := l.acquire(ctx, method)
		if err != nil {
			return err
		}
		completed := false
		defer func() { t.Release(outcomeContext(ctx, err, completed)) }()
		err = invoker(ctx, method, req, reply, cc, callOpts...)
		completed = true
		return err
	}
}

// StreamClientInterceptor returns a client interceptor that opens a stream
// only while it holds a permit of sem for its key, and keeps the permit
// until the stream ends (see the package documentation). It panics if sem
// is nil or an option is out of range.
func StreamClientInterceptor(sem core.KeyedSemaphore, opts ...Option) grpc.StreamClientInterceptor {
	l := newLimiter(sem, opts)
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		ctx, t, err := l.acquire(ctx, method)
		if err != nil {
			return nil, err
		}
		cs, err := streamer(ctx, desc, cc, method, callOpts...)
		if err != nil {
			t.Release(ctx)
			return nil, err
		}
		s := &clientStream{ClientStream: cs, serverStreams: desc.ServerStreams}
		s.release = sync.OnceFunc(func() { t.Release(ctx) })
		s.stop = context.AfterFunc(ctx, s.release)
		return s, nil
	}
}

// clientStream releases its permit once, when the stream ends by the rules
// of grpc-go's ClientConn.NewStream.
type clientStream struct {
	grpc.ClientStream
	serverStreams bool
	release       func()      // releases the permit once
	stop          func() bool // stops the context.AfterFunc
}

func (s *clientStream) end() {
	s.stop()
	s.release()
}

func (s *clientStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	// Any error (io.EOF included) ends the stream. Without server
	// streaming, the one response ends it too: grpc-go has read the
	// trailers before returning it.
	if err != nil || !s.serverStreams {
		s.end()
	}
	return err
}

func (s *clientStream) SendMsg(m any) error {
	err := s.ClientStream.SendMsg(m)
	if err != nil && !errors.Is(err, io.EOF) {
		s.end()
	}
	return err
}

func (s *clientStream) Header() (metadata.MD, error) {
	md, err := s.ClientStream.Header()
	if err != nil && !errors.Is(err, io.EOF) {
		s.end()
	}
	return md, err
}
