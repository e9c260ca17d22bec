package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/distsem/distsem/examples/internal/clitest"
	"github.com/distsem/distsem/internal/testwait"

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
// value is one line and exit 2 (never a panic), an unreachable -redis is
// one line naming it and exit 1, and grpc-load fails when no call
// succeeds.
func TestCommandLine(t *testing.T) {
	t.Parallel()
	addr := clitest.RefusedAddr(t)
	clitest.Check(t, mainEnv, "gateway", []clitest.Case{
		{Args: "-h", Stderr: "", Code: 0},
		{Args: "-limit 0", Stderr: "gateway: -limit 0: must be at least 1 (see gateway -h)\n", Code: 2},
		{Args: "-report-limit -3", Stderr: "gateway: -report-limit -3: must be at least 1 (see gateway -h)\n", Code: 2},
		{Args: "-default-limit 0", Stderr: "gateway: -default-limit 0: must be at least 1 (see gateway -h)\n", Code: 2},
		{Args: "-max-wait -1s", Stderr: "gateway: -max-wait -1s: must not be negative (see gateway -h)\n", Code: 2},
		{Args: "-max-waiting -1", Stderr: "gateway: -max-waiting -1: must not be negative (see gateway -h)\n", Code: 2},
		{Args: "-mode grpc-load -n 0", Stderr: "gateway: -n 0: must be at least 1 (see gateway -h)\n", Code: 2},
		{Args: "-ms -5", Stderr: "gateway: -ms -5: want whole milliseconds from 0 to 60000 (see gateway -h)\n", Code: 2},
		{Args: "-ms 60001", Stderr: "gateway: -ms 60001: want whole milliseconds from 0 to 60000 (see gateway -h)\n", Code: 2},
		{Args: "-limit 1.5", Stderr: `gateway: invalid value "1.5" for flag -limit: parse error (see gateway -h)` + "\n", Code: 2},
		{Args: "-mode soap", Stderr: `gateway: -mode "soap": want http, echo, grpc or grpc-load (see gateway -h)` + "\n", Code: 2},
		{Args: "-bogus", Stderr: "gateway: flag provided but not defined: -bogus (see gateway -h)\n", Code: 2},
		{Args: "serve", Stderr: `gateway: unexpected argument "serve" (see gateway -h)` + "\n", Code: 2},
		{Args: "-redis localhost:6379", Stderr: `gateway: -redis "localhost:6379": redis: invalid URL scheme: localhost (see gateway -h)` + "\n", Code: 2},
		{Args: "-failure-policy sometimes", Stderr: `gateway: -failure-policy "sometimes": want closed, open or local:K (K at least 1) (see gateway -h)` + "\n", Code: 2},
		{Args: "-failure-policy local:0", Stderr: `gateway: -failure-policy "local:0": want closed, open or local:K (K at least 1) (see gateway -h)` + "\n", Code: 2},
		// Redis unreachable under the default policy: no serving, one line.
		{Args: "-addr " + addr + " -redis redis://" + addr,
			Stderr: "gateway: redis " + addr + ": dial tcp " + addr + ": connect: connection refused\n", Code: 1},
	})

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
	testwait.Until(t, 30*time.Second, "the server does not listen", func() bool {
		if c, err := net.Dial("tcp", cfg.addr); err == nil {
			c.Close()
			return true
		}
		select {
		case err := <-served:
			t.Fatal(err)
		default:
		}
		return false
	})

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
