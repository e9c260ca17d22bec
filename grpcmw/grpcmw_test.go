package grpcmw_test

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
	"github.com/distsem/distsem/grpcmw"
	"github.com/distsem/distsem/internal/servertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// events forwards the observer events of one kind to a channel.
func events(kind admit.EventKind) (admit.Observer, chan admit.Event) {
	ch := make(chan admit.Event, 100)
	return admit.ObserverFunc(func(e admit.Event) {
		if e.Kind == kind {
			ch <- e
		}
	}), ch
}

func wantCode(t *testing.T, err error, code codes.Code) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code {
		t.Fatalf("error %v: code %v, want %v", err, st.Code(), code)
	}
	if strings.Contains(st.Message(), "core:") || strings.Contains(st.Message(), "admit:") {
		t.Fatalf("status message %q leaks internal error text", st.Message())
	}
}

func TestUnaryServerLimit(t *testing.T) {
	const limit, calls = 2, 6
	sem := core.NewLocalKeyed(100, core.WithLimits(map[string]int64{mUnary: limit}))
	s := newTestServer()
	cc := serve(t, s, []grpc.ServerOption{grpc.UnaryInterceptor(grpcmw.UnaryServerInterceptor(sem))})
	errs := make(chan error, calls)
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() { errs <- unary(t.Context(), cc, 1) })
	}
	for range limit {
		<-s.entered
	}
	for range calls - limit {
		wantCode(t, <-errs, codes.ResourceExhausted)
	}
	if got := servertest.InUse(t, sem, mUnary); got != limit {
		t.Fatalf("in use = %d, want %d", got, limit)
	}
	close(s.open)
	wg.Wait()
	for range limit {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := servertest.InUse(t, sem, mUnary); got != 0 {
		t.Fatalf("in use after = %d, want 0", got)
	}
}

func TestStreamServerHoldsForLifetime(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	s := newTestServer()
	cc := serve(t, s, []grpc.ServerOption{grpc.StreamInterceptor(grpcmw.StreamServerInterceptor(sem))})
	ctx := t.Context()
	first, err := cc.NewStream(ctx, descBidi, mBidi)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.SendMsg(wrapperspb.Int64(7)); err != nil {
		t.Fatal(err)
	}
	if err := first.RecvMsg(new(wrapperspb.Int64Value)); err != nil {
		t.Fatal(err)
	}
	// The first stream is open and holds the permit: a second is refused.
	second, err := cc.NewStream(ctx, descBidi, mBidi)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, second.RecvMsg(new(wrapperspb.Int64Value)), codes.ResourceExhausted)
	if got := servertest.InUse(t, sem, mBidi); got != 1 {
		t.Fatalf("in use = %d, want 1", got)
	}
	first.CloseSend()
	if err := first.RecvMsg(new(wrapperspb.Int64Value)); err != io.EOF {
		t.Fatalf("end of stream: %v", err)
	}
	// The handler has returned (the client saw its status): released.
	if got := servertest.InUse(t, sem, mBidi); got != 0 {
		t.Fatalf("in use after the stream = %d, want 0", got)
	}
}

func TestServerStreamAbandoned(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	rel, released := events(admit.EventReleased)
	s := newTestServer()
	cc := serve(t, s, []grpc.ServerOption{grpc.StreamInterceptor(grpcmw.StreamServerInterceptor(sem, grpcmw.WithObserver(rel)))})
	ctx, cancel := context.WithCancel(t.Context())
	st, err := cc.NewStream(ctx, descBidi, mBidi)
	if err != nil {
		t.Fatal(err)
	}
	st.SendMsg(wrapperspb.Int64(1))
	<-s.entered
	cancel() // the client walks away midway
	<-released
	if got := servertest.InUse(t, sem, mBidi); got != 0 {
		t.Fatalf("in use = %d, want 0", got)
	}
}

func TestServerUnavailable(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	sem.Close()
	s := newTestServer()
	cc := serve(t, s, []grpc.ServerOption{
		grpc.UnaryInterceptor(grpcmw.UnaryServerInterceptor(sem)),
		grpc.StreamInterceptor(grpcmw.StreamServerInterceptor(sem)),
	})
	wantCode(t, unary(t.Context(), cc, 0), codes.Unavailable)
	st, err := cc.NewStream(t.Context(), descServer, mServer)
	if err != nil {
		t.Fatal(err)
	}
	st.SendMsg(wrapperspb.Int64(0))
	wantCode(t, st.RecvMsg(new(wrapperspb.Int64Value)), codes.Unavailable)
}

func TestServerClientGone(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	q, queued := events(admit.EventQueued)
	r, rejected := events(admit.EventRejected)
	obs := admit.ObserverFunc(func(e admit.Event) { q.Observe(e); r.Observe(e) })
	s := newTestServer()
	cc := serve(t, s, []grpc.ServerOption{grpc.UnaryInterceptor(
		grpcmw.UnaryServerInterceptor(sem, grpcmw.WithMaxWait(time.Minute), grpcmw.WithObserver(obs)))})
	holder := make(chan error, 1)
	go func() { holder <- unary(t.Context(), cc, 1) }()
	<-s.entered

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- unary(ctx, cc, 1) }()
	<-queued
	cancel()
	wantCode(t, <-done, codes.Canceled)
	if e := <-rejected; e.Reason != admit.ClientGone {
		t.Fatalf("server saw %v, want client_gone", e.Reason)
	}

	// A deadline that passes while queued: DeadlineExceeded.
	dctx, dcancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer dcancel()
	wantCode(t, unary(dctx, cc, 1), codes.DeadlineExceeded)
	<-rejected

	close(s.open)
	if err := <-holder; err != nil {
		t.Fatal(err)
	}
	if got := servertest.InUse(t, sem, mUnary); got != 0 {
		t.Fatalf("in use = %d, want 0", got)
	}
}

func TestServerPanicReleases(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	icpt := grpcmw.UnaryServerInterceptor(sem)
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Fatalf("recovered %v, want the handler's panic", v)
			}
		}()
		icpt(t.Context(), nil, &grpc.UnaryServerInfo{FullMethod: mUnary}, func(context.Context, any) (any, error) {
			panic("boom")
		})
	}()
	if got := servertest.InUse(t, sem, mUnary); got != 0 {
		t.Fatalf("in use after panic = %d, want 0", got)
	}
}

func TestKeyAndRejectHandler(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	icpt := grpcmw.UnaryServerInterceptor(sem,
		grpcmw.WithKey(func(context.Context, string) string { return "all" }),
		grpcmw.WithRejectHandler(func(_ context.Context, m string, rej *admit.Rejection) error {
			return status.Errorf(codes.Unavailable, "%s busy (%s)", m, rej.Reason)
		}))
	held, _ := sem.Acquire(t.Context(), "all")
	defer held.Release(t.Context())
	_, err := icpt(t.Context(), nil, &grpc.UnaryServerInfo{FullMethod: "/a.B/C"}, func(context.Context, any) (any, error) {
		t.Fatal("handler ran")
		return nil, nil
	})
	if st, _ := status.FromError(err); st.Code() != codes.Unavailable || st.Message() != "/a.B/C busy (no_capacity)" {
		t.Fatalf("err = %v", err)
	}
}

func TestUnaryClientBulkhead(t *testing.T) {
	sem := core.NewLocalKeyed(1)
	s := newTestServer()
	cc := serve(t, s, nil, grpc.WithUnaryInterceptor(grpcmw.UnaryClientInterceptor(sem)))
	first := make(chan error, 1)
	go func() { first <- unary(t.Context(), cc, 1) }()
	<-s.entered
	// Refused locally: the server never sees it.
	wantCode(t, unary(t.Context(), cc, 1), codes.ResourceExhausted)
	close(s.open)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if len(s.entered) != 0 {
		t.Fatal("the refused call reached the server")
	}
	if got := servertest.InUse(t, sem, mUnary); got != 0 {
		t.Fatalf("in use = %d, want 0", got)
	}
}
