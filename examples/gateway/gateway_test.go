package main

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

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
			m := miniredis.RunT(t)
			rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
			defer rdb.Close()
			cfg := config{mode: mode, name: "gw", limit: 1, reportLimit: 1, defLimit: 8, maxWaiting: 8}
			g := newGateway(cfg, rdb)
			defer g.sem.Close()
			h := g.httpHandler()
			const key = "GET /work" // the same key for both
			if mode == "echo" {
				h = g.echoHandler()
			}
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
	addr := clitest.ClosedAddr(t)
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
