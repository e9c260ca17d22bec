package adapters_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"google.golang.org/grpc"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
	"github.com/distsem/distsem/core/admit/promadmit"
	"github.com/distsem/distsem/echomw"
	"github.com/distsem/distsem/grpcmw"
	"github.com/distsem/distsem/httpmw"
)

// nopWriter is a ResponseWriter that keeps nothing, so that the benchmark
// measures the middleware, not a recorder.
type nopWriter struct{ h http.Header }

func (w nopWriter) Header() http.Header         { return w.h }
func (w nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w nopWriter) WriteHeader(int)             {}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })

// backends are the semaphores the adapters are measured with; the limit is
// never reached, so every request takes the fast path. It is 1<<18: from
// 2^19 on, core.Local takes its mutex on every call (its lock-free state
// word holds smaller limits only), which is not the path users get.
func backends() []struct {
	name string
	sem  func() core.KeyedSemaphore
	obs  admit.Observer
} {
	return []struct {
		name string
		sem  func() core.KeyedSemaphore
		obs  admit.Observer
	}{
		{"local-keyed", func() core.KeyedSemaphore { return core.NewLocalKeyed(1 << 18) }, nil},
		{"local-global", func() core.KeyedSemaphore { return admit.Global(core.NewLocal(1 << 18)) }, nil},
		{"local-keyed+prometheus", func() core.KeyedSemaphore { return core.NewLocalKeyed(1 << 18) },
			promadmit.New(promadmit.WithKeys("GET /work", "/work", "/b.S/M"))},
	}
}

func BenchmarkHTTP(b *testing.B) {
	req := httptest.NewRequest("GET", "/work", nil)
	req.Pattern = "GET /work" // as ServeMux sets it
	w := nopWriter{http.Header{}}
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			okHandler.ServeHTTP(w, req)
		}
	})
	for _, be := range backends() {
		opts := []httpmw.Option{}
		if be.obs != nil {
			opts = append(opts, httpmw.WithObserver(be.obs))
		}
		h := httpmw.Handler(okHandler, be.sem(), opts...)
		b.Run(be.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, req)
			}
		})
		b.Run(be.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					h.ServeHTTP(w, req)
				}
			})
		})
	}
}

func BenchmarkGRPCUnaryServer(b *testing.B) {
	ctx := context.Background()
	info := &grpc.UnaryServerInfo{FullMethod: "/b.S/M"}
	handler := func(context.Context, any) (any, error) { return nil, nil }
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			handler(ctx, nil)
		}
	})
	for _, be := range backends() {
		opts := []grpcmw.Option{}
		if be.obs != nil {
			opts = append(opts, grpcmw.WithObserver(be.obs))
		}
		icpt := grpcmw.UnaryServerInterceptor(be.sem(), opts...)
		b.Run(be.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				icpt(ctx, nil, info, handler)
			}
		})
	}
}

func BenchmarkGRPCUnaryClient(b *testing.B) {
	ctx := context.Background()
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			invoker(ctx, "/b.S/M", nil, nil, nil)
		}
	})
	for _, be := range backends()[:2] {
		icpt := grpcmw.UnaryClientInterceptor(be.sem())
		b.Run(be.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				icpt(ctx, "/b.S/M", nil, nil, nil, invoker)
			}
		})
	}
}

func BenchmarkEcho(b *testing.B) {
	e := echo.New()
	req := httptest.NewRequest("GET", "/work", nil)
	c := e.NewContext(req, nopWriter{http.Header{}})
	c.SetPath("/work")
	next := func(c echo.Context) error { return nil }
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			next(c)
		}
	})
	for _, be := range backends() {
		h := echomw.LimitWithConfig(echomw.Config{Semaphore: be.sem(), Observer: be.obs})(next)
		b.Run(be.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				// Each request starts as the client's: the middleware sets a
				// copy holding its permit, which would otherwise pile up.
				c.SetRequest(req)
				h(c)
			}
		})
	}
}
