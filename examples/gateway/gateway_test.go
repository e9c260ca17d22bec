package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/examples/internal/clitest"
)

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(mainEnv); ok { // see cli_test.go
		os.Args = append([]string{"gateway"}, strings.Fields(args)...)
		main()
	}
	goleak.VerifyTestMain(m)
}

// Both HTTP flavours: /work is limited, a saturated /work answers 429, and
// /report and /metrics still answer.
func TestGatewayRoutes(t *testing.T) {
	for _, mode := range []string{"http", "echo"} {
		t.Run(mode, func(t *testing.T) {
			g, h := testGateway(t, mode)
			const key = "GET /work" // the same key for both
			srv := httptest.NewServer(h)
			defer srv.Close()

			p, err := g.sem.Acquire(context.Background(), key) // saturate /work
			if err != nil {
				t.Fatal(err)
			}
			for path, want := range map[string]int{"/work?ms=1": 429, "/report?ms=1": 200} {
				resp, err := srv.Client().Get(srv.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("GET %s = %d, want %d", path, resp.StatusCode, want)
				}
			}
			// The fleet-wide state of the route, read from Redis.
			fleet := metrics(t, srv.URL)
			if want := `distsem_sem_fleet_in_use{key="GET /work"} 1`; !strings.Contains(fleet, want) {
				t.Errorf("metrics lack %s", want)
			}
			p.Release(context.Background())
			resp, err := srv.Client().Get(srv.URL + "/work?ms=1")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("GET /work after release = %d", resp.StatusCode)
			}
			body := metrics(t, srv.URL)
			for _, want := range []string{
				`distsem_admit_rejections_total{key="` + key + `",reason="no_capacity"} 1`,
				`distsem_sem_fleet_limit{key="GET /work"} 1`,
				`distsem_sem_fleet_in_use{key="GET /work"} 0`,
				`distsem_sem_in_use{key="GET /work"} 0`,
			} {
				if !strings.Contains(body, want) {
					t.Errorf("metrics lack %s", want)
				}
			}
		})
	}
}

// testGateway returns a gateway of limits 1 on an embedded Redis, and its
// handler in mode http or echo.
func testGateway(t *testing.T, mode string) (*gateway, http.Handler) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	g := newGateway(config{mode: mode, name: "gw", limit: 1, reportLimit: 1, defLimit: 8, maxWaiting: 8}, rdb)
	t.Cleanup(func() { g.sem.Close() })
	if mode == "echo" {
		return g, g.echoHandler()
	}
	return g, g.httpHandler()
}

// metrics returns the gateway's /metrics page.
func metrics(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// Under -failure-policy open an unreachable -redis is a log line naming it,
// not an error, and the routes are served without a limit.
func TestServesWithoutRedisWhenOpen(t *testing.T) {
	var logged bytes.Buffer
	log.SetOutput(&logged)
	defer log.SetOutput(os.Stderr)
	addr := clitest.RefusedAddr(t)
	cfg := config{mode: "http", redisURL: "redis://" + addr, policyName: "open", policy: core.FailOpen,
		name: "gw", limit: 1, reportLimit: 1, defLimit: 8, maxWaiting: 8}
	rdb, closeRedis, err := openRedis(t.Context(), cfg)
	if err != nil {
		t.Fatalf("openRedis with -failure-policy open: %v", err)
	}
	defer closeRedis()
	if line := logged.String(); !strings.Contains(line, "redis "+addr+": ") || !strings.Contains(line, "connection refused") {
		t.Errorf("logged %q, want a line naming %s and the refused connection", line, addr)
	}
	g := newGateway(cfg, rdb)
	defer g.sem.Close()
	rec := httptest.NewRecorder()
	g.httpHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/work?ms=0", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("GET /work without Redis, failing open: %d %q, want 200", rec.Code, rec.Body.String())
	}
}

// A bad ms is a 400 naming the parameter and the accepted range, on both
// HTTP flavours, before any permit is taken: with the route saturated it is
// still a 400, not a 429.
func TestBadMS(t *testing.T) {
	for _, mode := range []string{"http", "echo"} {
		t.Run(mode, func(t *testing.T) {
			g, h := testGateway(t, mode)
			get := func(target string) (int, string) {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
				var e struct{ Message string } // Echo renders errors as JSON
				if mode == "echo" && rec.Code != 200 && json.Unmarshal(rec.Body.Bytes(), &e) == nil {
					return rec.Code, e.Message
				}
				return rec.Code, rec.Body.String()
			}
			for _, c := range []struct{ target, want string }{
				{"/work?ms=0", "ok 0ms"},
				{"/work", "ok 0ms"}, // no ms: hold nothing
				{"/report?ms=2", "ok 2ms"},
			} {
				if code, body := get(c.target); code != 200 || body != c.want+"\n" {
					t.Errorf("GET %s = %d %q, want 200 %q", c.target, code, body, c.want)
				}
			}

			p, err := g.sem.Acquire(t.Context(), "GET /work") // saturate /work
			if err != nil {
				t.Fatal(err)
			}
			defer p.Release(context.Background())
			for _, v := range []string{"abc", "-5", "60001", "1.5", "", "9223372036854775808"} {
				target := "/work?ms=" + url.QueryEscape(v)
				want := fmt.Sprintf("ms=%q: want whole milliseconds from 0 to 60000", v)
				if code, body := get(target); code != 400 || !strings.Contains(body, want) {
					t.Errorf("GET %s = %d %q, want 400 with %q", target, code, body, want)
				}
			}
			if code, _ := get("/work?ms=1"); code != 429 {
				t.Errorf("GET /work?ms=1 while saturated = %d, want 429", code)
			}
		})
	}
}

// gRPC Do refuses an ms outside 0 to 60000 with InvalidArgument, naming
// the range, before the interceptor (which takes the permit) runs.
func TestBadMSGRPC(t *testing.T) {
	do := workService.Methods[0].Handler
	for _, c := range []struct {
		ms   int64
		code codes.Code
	}{{-5, codes.InvalidArgument}, {60001, codes.InvalidArgument}, {0, codes.OK}, {60000, codes.OK}} {
		intercepted := false
		icpt := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, _ grpc.UnaryHandler) (any, error) {
			intercepted = true
			return wrapperspb.String("intercepted"), nil // never holds
		}
		dec := func(m any) error { m.(*wrapperspb.Int64Value).Value = c.ms; return nil }
		_, err := do(nil, t.Context(), dec, icpt)
		if status.Code(err) != c.code || intercepted != (c.code == codes.OK) {
			t.Errorf("Do(%d) = %v, interceptor ran: %v; want %v", c.ms, err, intercepted, c.code)
		}
		if want := fmt.Sprintf("ms %d: want whole milliseconds from 0 to 60000", c.ms); err != nil && status.Convert(err).Message() != want {
			t.Errorf("Do(%d) message %q, want %q", c.ms, status.Convert(err).Message(), want)
		}
	}
}
