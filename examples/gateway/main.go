// Command gateway is a gateway with per-route concurrency limits that hold
// across every gateway process sharing one Redis.
//
//	go run ./examples/gateway                      # net/http, embedded miniredis
//	go run ./examples/gateway -redis redis://127.0.0.1:6379/0 -limit 4
//	go run ./examples/gateway -mode echo           # the same routes on Echo
//	go run ./examples/gateway -mode grpc           # a gRPC service
//	go run ./examples/gateway -mode grpc-load -addr 127.0.0.1:8080 -n 40 -c 10
//
// Routes (http and echo modes):
//
//	GET /work?ms=D     holds its permit D ms, then 200   (limit: -limit)
//	GET /report?ms=D   the same                          (limit: -report-limit)
//	GET /metrics       Prometheus metrics (not limited): this process's
//	                   admissions and permits, and each route's limit,
//	                   permits in use and waiters fleet-wide
//
// D is 0 to 60000 (absent: 0); any other ms is a 400, before the request
// takes a permit.
//
// The gRPC service is gateway.Work with one method, Do, whose request is a
// google.protobuf.Int64Value (milliseconds to hold, 0 to 60000, else
// InvalidArgument) and whose limit is -limit.
//
// Without -redis the gateway starts an embedded miniredis on 127.0.0.1 and
// prints its URL: start more gateways with -redis set to it and they share
// the same limits. With -redis it first PINGs that server (once, within
// 3s): if it does not answer, the gateway prints one line naming the
// address and the cause and exits 1, since with the default
// -failure-policy closed it could only refuse every limited request. With
// -failure-policy open or local:K it logs that line and serves anyway.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit/promadmit"
	"github.com/distsem/distsem/core/promsem"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/examples/internal/cli"
)

// config is what the flags say.
type config struct {
	mode        string
	addr        string
	redisURL    string
	name        string
	limit       int64
	reportLimit int64
	defLimit    int64
	maxWait     time.Duration
	maxWaiting  int
	policyName  string             // -failure-policy as given
	policy      core.FailurePolicy // parsed from policyName
	n, c        int                // grpc-load
	ms          int64
	verbose     bool
}

func main() {
	os.Exit(cli.ExitCode("gateway", runMain(os.Args[1:], os.Stdout), os.Stderr))
}

// runMain parses args and runs the gateway until an interrupt.
func runMain(args []string, stdout io.Writer) error {
	cfg, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	cli.QuietRedis(cfg.verbose)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return run(ctx, cfg, stdout)
}

func run(ctx context.Context, cfg config, stdout io.Writer) error {
	if cfg.mode == "grpc-load" {
		return grpcLoad(ctx, cfg, stdout)
	}
	rdb, closeRedis, err := openRedis(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeRedis()

	g := newGateway(cfg, rdb)
	defer g.sem.Close()
	switch cfg.mode {
	case "http":
		return g.serveHTTP(ctx, g.httpHandler())
	case "echo":
		return g.serveHTTP(ctx, g.echoHandler())
	case "grpc":
		return g.serveGRPC(ctx)
	}
	return fmt.Errorf("unknown -mode %q", cfg.mode)
}

// redisCheckTimeout bounds the check of -redis at startup.
const redisCheckTimeout = 3 * time.Second

// openRedis connects to -redis and checks that it answers (see checkRedis),
// or starts an embedded miniredis on loopback. An unreachable -redis is an
// error under -failure-policy closed, and a log line under the others.
func openRedis(ctx context.Context, cfg config) (*redis.Client, func(), error) {
	if cfg.redisURL != "" {
		opt, err := redis.ParseURL(cfg.redisURL)
		if err != nil {
			return nil, nil, fmt.Errorf("-redis: %w", err)
		}
		if err := checkRedis(ctx, cfg.redisURL, redisCheckTimeout); err != nil {
			if cfg.policyName == "closed" || cfg.policyName == "" {
				return nil, nil, err
			}
			log.Printf("%v; serving with -failure-policy %s until it answers", err, cfg.policyName)
		}
		rdb := redis.NewClient(opt)
		return rdb, func() { rdb.Close() }, nil
	}
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, nil, err
	}
	log.Printf("embedded miniredis: start more gateways with -redis redis://%s to share its limits", m.Addr())
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	return rdb, func() { rdb.Close(); m.Close() }, nil
}

// checkRedis PINGs the server of url once, within timeout, on a client of
// its own that neither retries the command nor the dial, so a refused
// connection comes back at once with its cause. The error names the
// server's address.
func checkRedis(ctx context.Context, url string, timeout time.Duration) error {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return fmt.Errorf("-redis: %w", err)
	}
	opt.MaxRetries, opt.DialerRetries = -1, 1
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = timeout, timeout, timeout
	opt.ContextTimeoutEnabled = true
	probe := redis.NewClient(opt)
	defer probe.Close()
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = probe.Ping(pctx).Err()
	switch {
	case err == nil:
		return nil
	case ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)):
		return fmt.Errorf("redis %s: no answer within %v: %w", opt.Addr, timeout, err)
	}
	return fmt.Errorf("redis %s: %w", opt.Addr, err)
}

// newGateway builds the semaphores and metrics of every mode.
func newGateway(cfg config, rdb redis.UniversalClient) *gateway {
	// The override table: its keys are also the only metric label values.
	limits := map[string]int64{
		"GET /work":   cfg.limit, // net/http patterns and Echo routes alike
		"GET /report": cfg.reportLimit,
		grpcMethod:    cfg.limit,
	}
	keys := make([]string, 0, len(limits))
	for k := range limits {
		keys = append(keys, k)
	}
	semCol := promsem.New(promsem.WithKeys(keys...))
	sem := redissem.NewKeyed(rdb, cfg.name, cfg.defLimit, redissem.WithLimits(limits),
		redissem.WithFailurePolicy(cfg.policy),
		redissem.WithObserver(semCol),
		redissem.WithOnError(func(err error) { log.Printf("redis: %v", err) }))
	col := promadmit.New(promadmit.WithKeys(keys...))
	reg := prometheus.NewRegistry()
	reg.MustRegister(col, semCol, promsem.NewStatsCollector(sem, promsem.WithKeys(keys...)))
	return &gateway{cfg: cfg, sem: sem, col: col, reg: reg}
}

type gateway struct {
	cfg config
	sem *core.Keyed
	col *promadmit.Collector
	reg *prometheus.Registry
}
