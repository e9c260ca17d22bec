package main

import (
	"flag"
	"io"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/examples/internal/cli"
)

const usage = `Usage: gateway [flags]

A gateway with per-route concurrency limits shared by every gateway on the
same Redis: -mode http, echo or grpc serves; -mode grpc-load is a client
that loads a grpc gateway and fails when no call succeeds.

Flags:
`

// parseFlags reads the command line. A bad flag or value is a
// *cli.UsageError; -h returns flag.ErrHelp after printing the usage to
// stdout.
func parseFlags(args []string, stdout io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.StringVar(&cfg.mode, "mode", "http", "http, echo, grpc, or grpc-load (a client for a grpc gateway)")
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "listen address (grpc-load: the server's)")
	fs.StringVar(&cfg.redisURL, "redis", "", "Redis URL shared by the gateways; empty starts an embedded miniredis")
	fs.StringVar(&cfg.name, "name", "gateway", "semaphore name: gateways with the same Redis and name share limits")
	fs.Int64Var(&cfg.limit, "limit", 4, "in-flight limit of GET /work (and of gRPC Do), fleet-wide; at least 1")
	fs.Int64Var(&cfg.reportLimit, "report-limit", 2, "in-flight limit of GET /report, fleet-wide; at least 1")
	fs.Int64Var(&cfg.defLimit, "default-limit", 64, "in-flight limit of any other route; at least 1")
	fs.DurationVar(&cfg.maxWait, "max-wait", 0, "how long a request may wait for a permit (0: reject at once)")
	fs.IntVar(&cfg.maxWaiting, "max-waiting", 128, "how many requests of one route may wait in this process")
	fs.StringVar(&cfg.policyName, "failure-policy", "closed", "while Redis is unreachable, a limited request is refused (closed: 503),\n"+
		"not limited (open) or limited to K in flight per route in this process (local:K);\n"+
		"with closed the gateway also refuses to start without Redis")
	fs.IntVar(&cfg.n, "n", 40, "grpc-load: number of calls")
	fs.IntVar(&cfg.c, "c", 10, "grpc-load: concurrent calls")
	fs.Int64Var(&cfg.ms, "ms", 200, "grpc-load: milliseconds each call holds its permit")
	fs.BoolVar(&cfg.verbose, "v", false, "also print the Redis client's own log lines")
	if err := cli.Parse(fs, args, stdout, usage); err != nil {
		return cfg, err
	}
	switch cfg.mode {
	case "http", "echo", "grpc", "grpc-load":
	default:
		return cfg, cli.Usagef("-mode %q: want http, echo, grpc or grpc-load", cfg.mode)
	}
	for _, l := range []struct {
		name string
		v    int64
	}{{"-limit", cfg.limit}, {"-report-limit", cfg.reportLimit}, {"-default-limit", cfg.defLimit},
		{"-n", int64(cfg.n)}, {"-c", int64(cfg.c)}} {
		if l.v < 1 {
			return cfg, cli.Usagef("%s %d: must be at least 1", l.name, l.v)
		}
	}
	switch {
	case cfg.maxWait < 0:
		return cfg, cli.Usagef("-max-wait %v: must not be negative", cfg.maxWait)
	case cfg.maxWaiting < 0:
		return cfg, cli.Usagef("-max-waiting %d: must not be negative", cfg.maxWaiting)
	case cfg.ms < 0 || cfg.ms > maxMS:
		return cfg, cli.Usagef("-ms %d: want %s", cfg.ms, msRange)
	}
	var err error
	if cfg.policy, err = parsePolicy(cfg.policyName); err != nil {
		return cfg, err
	}
	if cfg.redisURL != "" {
		if _, err := redis.ParseURL(cfg.redisURL); err != nil {
			return cfg, cli.Usagef("-redis %q: %v", cfg.redisURL, err)
		}
	}
	return cfg, nil
}

// parsePolicy reads -failure-policy: closed, open or local:K.
func parsePolicy(s string) (core.FailurePolicy, error) {
	switch s {
	case "closed":
		return core.FailClosed, nil
	case "open":
		return core.FailOpen, nil
	}
	if k, ok := strings.CutPrefix(s, "local:"); ok {
		n, err := strconv.ParseInt(k, 10, 64)
		if err == nil && n >= 1 && n <= core.MaxLimit {
			return core.FailLocal(n), nil
		}
	}
	return core.FailClosed, cli.Usagef("-failure-policy %q: want closed, open or local:K (K at least 1)", s)
}
