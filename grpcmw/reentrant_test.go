package grpcmw_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/grpcmw"
	"github.com/distsem/distsem/internal/servertest"
)

type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s ctxStream) Context() context.Context { return s.ctx }

// TestServerHandlersReenter: unary and stream handlers limited by the
// interceptors (limit 1, reentrant) acquire the same semaphore again
// without waiting: the interceptor put its permit into their ctx.
func TestServerHandlersReenter(t *testing.T) {
	const method = "/svc/M"
	base := core.NewLocalKeyed(1)
	defer base.Close()
	sem := core.ReentrantKeyed(base)
	reenter := func(ctx context.Context) error {
		p, err := sem.TryAcquire(ctx, method)
		if err != nil {
			return err
		}
		return p.Release(ctx)
	}
	unary := grpcmw.UnaryServerInterceptor(sem)
	if _, err := unary(t.Context(), nil, &grpc.UnaryServerInfo{FullMethod: method},
		func(ctx context.Context, _ any) (any, error) { return nil, reenter(ctx) }); err != nil {
		t.Fatalf("unary handler: %v", err)
	}
	stream := grpcmw.StreamServerInterceptor(sem)
	if err := stream(nil, ctxStream{ctx: t.Context()}, &grpc.StreamServerInfo{FullMethod: method},
		func(_ any, ss grpc.ServerStream) error { return reenter(ss.Context()) }); err != nil {
		t.Fatalf("stream handler: %v", err)
	}
	if got := servertest.InUse(t, base, method); got != 0 {
		t.Fatalf("in use after the calls = %d, want 0", got)
	}
}
