package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/distsem/distsem/examples/internal/clitest"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// mainEnv makes the test binary run main with these (space-separated)
// arguments, so that a test sees the real exit code and output.
const mainEnv = "DISTSEM_GATEWAY_MAIN"

func runCommand(t *testing.T, args string) (code int, stdout, stderr string) {
	t.Helper()
	return clitest.Run(t, mainEnv, args)
}

// The command line follows Go's conventions: -h exits 0, a bad flag or
// value is one line and exit 2 (never a panic), and grpc-load fails when
// no call succeeds.
func TestCommandLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args, stderr string
		code         int
	}{
		{"-h", "", 0},
		{"-limit 0", "gateway: -limit 0: must be at least 1 (see gateway -h)\n", 2},
		{"-report-limit -3", "gateway: -report-limit -3: must be at least 1 (see gateway -h)\n", 2},
		{"-default-limit 0", "gateway: -default-limit 0: must be at least 1 (see gateway -h)\n", 2},
		{"-max-wait -1s", "gateway: -max-wait -1s: must not be negative (see gateway -h)\n", 2},
		{"-max-waiting -1", "gateway: -max-waiting -1: must not be negative (see gateway -h)\n", 2},
		{"-mode grpc-load -n 0", "gateway: -n 0: must be at least 1 (see gateway -h)\n", 2},
		{"-ms -5", "gateway: -ms -5: must not be negative (see gateway -h)\n", 2},
		{"-limit 1.5", `gateway: invalid value "1.5" for flag -limit: parse error (see gateway -h)` + "\n", 2},
		{"-mode soap", `gateway: -mode "soap": want http, echo, grpc or grpc-load (see gateway -h)` + "\n", 2},
		{"-bogus", "gateway: flag provided but not defined: -bogus (see gateway -h)\n", 2},
		{"serve", `gateway: unexpected argument "serve" (see gateway -h)` + "\n", 2},
		{"-redis localhost:6379", `gateway: -redis "localhost:6379": redis: invalid URL scheme: localhost (see gateway -h)` + "\n", 2},
	} {
		code, stdout, stderr := runCommand(t, tc.args)
		if code != tc.code || stderr != tc.stderr {
			t.Errorf("gateway %s: exit %d, stderr %q; want exit %d, stderr %q", tc.args, code, stderr, tc.code, tc.stderr)
		}
		if tc.args == "-h" && !strings.HasPrefix(stdout, "Usage: gateway [flags]\n") {
			t.Errorf("gateway -h printed %q, want the usage", stdout)
		}
	}

	addr := clitest.ClosedAddr(t)
	code, stdout, stderr := runCommand(t, "-mode grpc-load -n 3 -c 2 -addr "+addr)
	if code != 1 || !strings.HasPrefix(stderr, "gateway: all 3 calls failed; the first: ") || strings.Count(stderr, "\n") != 1 ||
		!strings.Contains(stdout, "Unavailable        3") {
		t.Errorf("grpc-load with no server: exit %d, stdout %q, stderr %q; want exit 1, 3 Unavailable, one line", code, stdout, stderr)
	}
}

// grpc-load against a gateway succeeds; with the limit saturated every call
// is rejected and it fails.
func TestGRPCLoad(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	cfg := config{mode: "grpc", addr: clitest.ClosedAddr(t), name: "gw", limit: 1, reportLimit: 1, defLimit: 8, maxWaiting: 8,
		n: 4, c: 1, ms: 1} // one call at a time: none waits for the limit of 1
	g := newGateway(cfg, rdb)
	defer g.sem.Close()
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- g.serveGRPC(ctx) }()
	defer func() { cancel(); <-served }()
	for { // until the server listens
		if c, err := net.Dial("tcp", cfg.addr); err == nil {
			c.Close()
			break
		}
		select {
		case err := <-served:
			t.Fatal(err)
		case <-time.After(10 * time.Millisecond):
		}
	}

	var out bytes.Buffer
	if err := grpcLoad(t.Context(), cfg, &out); err != nil || !strings.Contains(out.String(), "OK                 4") {
		t.Fatalf("grpc-load: %v\n%s", err, out.String())
	}

	p, err := g.sem.Acquire(t.Context(), grpcMethod) // saturate the method
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(context.Background())
	out.Reset()
	err = grpcLoad(t.Context(), cfg, &out)
	if err == nil || !strings.Contains(out.String(), "ResourceExhausted") {
		t.Fatalf("grpc-load with every call rejected: %v\n%s", err, out.String())
	}
}
