package otelsem_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	_ "modernc.org/sqlite"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/otelsem"
	"github.com/distsem/distsem/grpcmw"
	"github.com/distsem/distsem/httpmw"
	"github.com/distsem/distsem/sqlmw"
)

// An HTTP request through otelhttp's transport and handler and httpmw: the
// wait is a span of the server's request span, before the handler's own
// work, and it lasts as long as the request queued.
func TestHTTPSpanTree(t *testing.T) {
	tel := newTelemetry(otelsem.WithKeys("GET /work"))
	queued := make(chan struct{})
	sem := core.NewLocalKeyed(1, core.WithObserver(signal(tel.obs, map[core.EventKind]chan struct{}{core.EventWait: queued})))
	defer sem.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /work", func(w http.ResponseWriter, r *http.Request) {
		_, work := tel.tp.Tracer("test").Start(r.Context(), "work")
		work.End()
	})

	held, err := sem.Acquire(context.Background(), "GET /work") // another request holds the one permit
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-queued
		held.Release(context.Background())
	}()
	if code := tel.get(t, httpmw.Handler(mux, sem, httpmw.WithMaxWait(time.Minute)), "/work"); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}

	tel.wantTree(t, ""+
		"test\n"+
		"  HTTP GET (client)\n"+
		"    GET (server)\n"+
		"      distsem.wait\n"+
		"      work\n")
	tel.queuedWait(t, "GET /work")
}

// A unary call and a server stream through otelgrpc's stats handlers and
// grpcmw's server interceptors: each wait is a span of the server's span
// of its call.
func TestGRPCSpanTree(t *testing.T) {
	tel := newTelemetry(otelsem.WithKeys("/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch"))
	sem := core.NewLocalKeyed(1, core.WithObserver(tel.obs))
	defer sem.Close()

	srv := grpc.NewServer(
		grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(tel.tp), otelgrpc.WithPropagators(propagation.TraceContext{}))),
		grpc.UnaryInterceptor(grpcmw.UnaryServerInterceptor(sem)),
		grpc.StreamInterceptor(grpcmw.StreamServerInterceptor(sem)),
	)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		srv.Stop()
		<-served
	}()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(tel.tp), otelgrpc.WithPropagators(propagation.TraceContext{}))))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)

	tracer := tel.tp.Tracer("test")
	ctx, unary := tracer.Start(context.Background(), "unary")
	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	unary.End()

	ctx, stream := tracer.Start(context.Background(), "stream")
	sctx, cancel := context.WithCancel(ctx)
	w, err := client.Watch(sctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Recv(); err != nil { // the server holds the permit now
		t.Fatal(err)
	}
	cancel()
	for _, err := w.Recv(); err == nil; _, err = w.Recv() {
	}
	stream.End()
	srv.GracefulStop() // the server spans end with their handlers

	want := "" +
		"unary\n" +
		"  grpc.health.v1.Health/Check (client)\n" +
		"    grpc.health.v1.Health/Check (server)\n" +
		"      distsem.wait\n" +
		"stream\n" +
		"  grpc.health.v1.Health/Watch (client)\n" +
		"    grpc.health.v1.Health/Watch (server)\n" +
		"      distsem.wait\n"
	tel.wantTree(t, want)
}

// A query through sqlmw: the wait is a span of the span in the query's
// ctx.
func TestSQLSpanTree(t *testing.T) {
	tel := newTelemetry(otelsem.WithKeys("orders-db"))
	sem := core.NewLocal(1, core.WithName("orders-db"), core.WithObserver(tel.obs))
	defer sem.Close()
	db, err := sqlmw.Open("sqlite", "file::memory:", sem)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	ctx, request := tel.tp.Tracer("test").Start(context.Background(), "request")
	var n int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	request.End()

	tel.wantTree(t, "request\n  distsem.wait\n")
	if got := attrs(tel.span(t, otelsem.SpanName).Attributes()); got["distsem.semaphore"] != "orders-db" {
		t.Errorf("wait span attributes %v", got)
	}
}
