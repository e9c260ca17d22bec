package adaptertest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/adaptive"
	"github.com/distsem/distsem/core/admit"
	"github.com/distsem/distsem/echomw"
	"github.com/distsem/distsem/grpcmw"
	"github.com/distsem/distsem/httpmw"
	"github.com/distsem/distsem/sqlmw"
)

// sampleStore is an adaptive.Store that hands every non-empty window of
// samples to the test.
type sampleStore struct {
	adaptive.MemStore
	samples chan adaptive.Window
}

func (s *sampleStore) Sync(ctx context.Context, req adaptive.SyncRequest) (adaptive.SyncReply, error) {
	if req.Samples.Samples > 0 {
		s.samples <- req.Samples
	}
	return s.MemStore.Sync(ctx, req)
}

// Each adapter feeds an adaptive limit one sample per request or query,
// with its outcome: a request that went wrong on the server's side (a
// failed query) is Failed, one the client got wrong (a 4xx,
// InvalidArgument) a success.
func TestAdaptersReportOutcomes(t *testing.T) {
	// serve runs one request of each kind: "ok", "client" (the client's
	// mistake) and "server" (the server's failure).
	type serve func(t *testing.T, sem core.KeyedSemaphore, kind string)
	for name, run := range map[string]serve{
		"httpmw": func(t *testing.T, sem core.KeyedSemaphore, kind string) {
			h := httpmw.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				switch kind {
				case "client":
					w.WriteHeader(http.StatusBadRequest) // not seen: the middleware does not wrap w
				case "server":
					panic(http.ErrAbortHandler)
				}
			}), sem)
			defer func() { _ = recover() }()
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/k", nil))
		},
		"echomw": func(t *testing.T, sem core.KeyedSemaphore, kind string) {
			e := echo.New()
			e.GET("/k", func(c echo.Context) error {
				switch kind {
				case "client":
					return echo.ErrBadRequest
				case "server":
					return echo.ErrServiceUnavailable
				}
				return c.NoContent(http.StatusNoContent)
			}, echomw.Limit(sem))
			e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/k", nil))
		},
		"sqlmw": func(t *testing.T, sem core.KeyedSemaphore, kind string) {
			// A query's error is the database's: the client cannot get it
			// wrong in a way the adapter could tell, so "client" succeeds.
			db := sqlmw.OpenDB(fakeConnector{}, nil, sqlmw.WithKeyed(sem, func(context.Context, string) string { return "k" }))
			defer db.Close()
			q := "UPDATE t SET x = 1"
			if kind == "server" {
				q = failQuery
			}
			_, _ = db.ExecContext(t.Context(), q)
		},
		"grpcmw": func(t *testing.T, sem core.KeyedSemaphore, kind string) {
			icpt := grpcmw.UnaryServerInterceptor(sem)
			_, _ = icpt(t.Context(), nil, &grpc.UnaryServerInfo{FullMethod: "/t.T/K"}, func(context.Context, any) (any, error) {
				switch kind {
				case "client":
					return nil, status.Error(codes.InvalidArgument, "bad")
				case "server":
					return nil, status.Error(codes.Internal, "boom")
				}
				return nil, nil
			})
		},
	} {
		t.Run(name, func(t *testing.T) {
			store := &sampleStore{samples: make(chan adaptive.Window, 100)}
			lim, err := adaptive.New(core.NewLocal(4), store, adaptive.WithWindow(10*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer lim.Close()
			for _, kind := range []string{"ok", "client", "server"} {
				run(t, admit.Global(lim), kind)
			}
			var got adaptive.Window
			for got.Samples < 3 {
				select {
				case w := <-store.samples:
					got.Samples += w.Samples
					got.Failed += w.Failed
					got.TimedOut += w.TimedOut
				case <-t.Context().Done():
					t.Fatalf("samples so far %+v", got)
				}
			}
			if got.Samples != 3 || got.Failed != 1 || got.TimedOut != 0 {
				t.Fatalf("samples %+v, want 3 with 1 failed", got)
			}
		})
	}
}
