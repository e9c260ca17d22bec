package adapters_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"go.uber.org/goleak"
	"google.golang.org/grpc"

	"github.com/distsem/distsem/echomw"
	"github.com/distsem/distsem/grpcmw"
	"github.com/distsem/distsem/httpmw"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// documentedAllocs are the allocations per admitted request that
// bench/BENCHMARKS.md ("Adapters") states, by adapter and backend (the
// names of backends()). A change in core or in an adapter that moves one
// of them makes that section stale: rerun its command and update the table
// there, then this one. Keyed costs what global does, since a keyed Local
// permit is not wrapped.
var documentedAllocs = map[string]map[string]float64{
	"httpmw":              {"local-global": 3, "local-keyed": 3, "local-keyed+prometheus": 3},
	"grpcmw unary server": {"local-global": 2, "local-keyed": 2, "local-keyed+prometheus": 2},
	"grpcmw unary client": {"local-global": 1, "local-keyed": 1},
	"echomw":              {"local-global": 3, "local-keyed": 3, "local-keyed+prometheus": 3},
}

// TestAllocsAsDocumented checks that the allocation counts of
// bench/BENCHMARKS.md still hold: they do not depend on the machine's load,
// so a difference is a stale figure (or a regression), never noise.
func TestAllocsAsDocumented(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what escapes; the figures are of a normal build")
	}
	ctx := context.Background()
	for _, be := range backends() {
		got := map[string]float64{}

		// httpmw, as BenchmarkHTTP calls it.
		req := httptest.NewRequest("GET", "/work", nil)
		req.Pattern = "GET /work"
		w := nopWriter{http.Header{}}
		hopts := []httpmw.Option{}
		if be.obs != nil {
			hopts = append(hopts, httpmw.WithObserver(be.obs))
		}
		h := httpmw.Handler(okHandler, be.sem(), hopts...)
		got["httpmw"] = testing.AllocsPerRun(200, func() { h.ServeHTTP(w, req) })

		// grpcmw unary server, as BenchmarkGRPCUnaryServer.
		info := &grpc.UnaryServerInfo{FullMethod: "/b.S/M"}
		handler := func(context.Context, any) (any, error) { return nil, nil }
		gopts := []grpcmw.Option{}
		if be.obs != nil {
			gopts = append(gopts, grpcmw.WithObserver(be.obs))
		}
		srv := grpcmw.UnaryServerInterceptor(be.sem(), gopts...)
		got["grpcmw unary server"] = testing.AllocsPerRun(200, func() { _, _ = srv(ctx, nil, info, handler) })

		// grpcmw unary client, as BenchmarkGRPCUnaryClient (no observer).
		if be.obs == nil {
			invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
			cli := grpcmw.UnaryClientInterceptor(be.sem())
			got["grpcmw unary client"] = testing.AllocsPerRun(200, func() { _ = cli(ctx, "/b.S/M", nil, nil, nil, invoker) })
		}

		// echomw, as BenchmarkEcho.
		e := echo.New()
		ereq := httptest.NewRequest("GET", "/work", nil)
		c := e.NewContext(ereq, nopWriter{http.Header{}})
		c.SetPath("/work")
		eh := echomw.LimitWithConfig(echomw.Config{Semaphore: be.sem(), Observer: be.obs})(func(echo.Context) error { return nil })
		got["echomw"] = testing.AllocsPerRun(200, func() {
			c.SetRequest(ereq)
			_ = eh(c)
		})

		for adapter, n := range got {
			want, ok := documentedAllocs[adapter][be.name]
			if !ok {
				t.Errorf("%s, %s: %.0f allocations per request, not in bench/BENCHMARKS.md, Adapters", adapter, be.name, n)
				continue
			}
			if n != want {
				t.Errorf("%s, %s: %.0f allocations per request, bench/BENCHMARKS.md, Adapters, says %.0f: rerun its command and update it", adapter, be.name, n, want)
			}
		}
	}
}
