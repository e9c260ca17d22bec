package adaptertest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"google.golang.org/grpc"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/backend"
	"github.com/distsem/distsem/echomw"
	"github.com/distsem/distsem/grpcmw"
	"github.com/distsem/distsem/httpmw"
	"github.com/distsem/distsem/sqlmw"
)

// flowRecorder is a keyed semaphore that records the flow and level each
// Acquire or TryAcquire asks for, and grants from a Local.
type flowRecorder struct {
	got chan backend.AcquireSpec
	sem *core.Local
}

func (r flowRecorder) record(opts []core.AcquireOption) {
	spec, err := backend.ResolveAcquire(time.Second, opts...)
	if err != nil {
		panic(err)
	}
	r.got <- spec
}

func (r flowRecorder) Acquire(ctx context.Context, _ string, opts ...core.AcquireOption) (*core.Permit, error) {
	r.record(opts)
	return r.sem.Acquire(ctx)
}

func (r flowRecorder) TryAcquire(ctx context.Context, _ string, opts ...core.AcquireOption) (*core.Permit, error) {
	r.record(opts)
	return r.sem.TryAcquire(ctx)
}

// Each adapter asks for the permit in the flow and at the level that its
// flow function names, and the handler's ctx carries them on (sqlmw reads
// them from the query's ctx).
func TestAdaptersNameTheFlow(t *testing.T) {
	const flow, level = "tenant-a", 2
	flowOf := func() (string, int) { return flow, level }
	// inCtx reports whether ctx carries the flow on to code the handler calls.
	inCtx := func(ctx context.Context) bool { return len(core.FlowOptions(ctx)) == 2 }
	for name, run := range map[string]func(t *testing.T, sem core.KeyedSemaphore) bool{
		"httpmw": func(t *testing.T, sem core.KeyedSemaphore) (carried bool) {
			h := httpmw.Handler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { carried = inCtx(r.Context()) }),
				sem, httpmw.WithFlow(func(*http.Request) (string, int) { return flowOf() }))
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/k", nil))
			return carried
		},
		"echomw": func(t *testing.T, sem core.KeyedSemaphore) (carried bool) {
			e := echo.New()
			mw, err := echomw.Config{Semaphore: sem, Flow: func(echo.Context) (string, int) { return flowOf() }}.ToMiddleware()
			if err != nil {
				t.Fatal(err)
			}
			e.GET("/k", func(c echo.Context) error {
				carried = inCtx(c.Request().Context())
				return c.NoContent(http.StatusNoContent)
			}, mw)
			e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/k", nil))
			return carried
		},
		"grpcmw": func(t *testing.T, sem core.KeyedSemaphore) (carried bool) {
			icpt := grpcmw.UnaryServerInterceptor(sem, grpcmw.WithFlow(func(context.Context, string) (string, int) { return flowOf() }))
			_, _ = icpt(t.Context(), nil, &grpc.UnaryServerInfo{FullMethod: "/t.T/K"}, func(ctx context.Context, _ any) (any, error) {
				carried = inCtx(ctx)
				return nil, nil
			})
			return carried
		},
		"sqlmw": func(t *testing.T, sem core.KeyedSemaphore) bool {
			db := sqlmw.OpenDB(fakeConnector{}, nil, sqlmw.WithKeyed(sem, func(context.Context, string) string { return "k" }))
			defer db.Close()
			if _, err := db.ExecContext(core.ContextWithFlow(t.Context(), flow, level), "UPDATE t SET x = 1"); err != nil {
				t.Fatal(err)
			}
			return true
		},
	} {
		t.Run(name, func(t *testing.T) {
			rec := flowRecorder{got: make(chan backend.AcquireSpec, 4), sem: core.NewLocal(1)}
			if !run(t, rec) {
				t.Error("the handler's ctx does not carry the flow")
			}
			spec := <-rec.got
			if spec.Flow != flow || spec.Level != level {
				t.Fatalf("asked for flow %q level %d, want %q %d", spec.Flow, spec.Level, flow, level)
			}
		})
	}
}
