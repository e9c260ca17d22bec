package main

import (
	"flag"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/examples/internal/cli"
)

// verboseEnv, when set, lets go-redis print its own log lines (-v); the
// workers inherit it.
const verboseEnv = "DISTSEM_MAPREDUCE_VERBOSE"

const usage = `Usage: mapreduce [flags]

A MapReduce job whose subtask processes share one limit of K queries at
once against the database. With no flags it runs on an SQLite file and an
in-process Redis; -driver pgx -dsn URL and -redis URL use real servers.
It runs the job with the semaphore, then with a per-process
SetMaxOpenConns split of K (-compare), and prints both.

Flags:
`

type options struct {
	workerConfig
	compare  bool
	chart    string
	progress time.Duration
	verbose  bool
}

// parseFlags reads the command line. A bad flag or value is a
// *cli.UsageError; -h returns flag.ErrHelp after printing the usage to
// stdout.
func parseFlags(args []string, stdout io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("mapreduce", flag.ContinueOnError)
	fs.IntVar(&o.Workers, "workers", 6, "number of subtask processes")
	fs.IntVar(&o.Concurrency, "concurrency", 4, "goroutines per subtask")
	fs.Int64Var(&o.Limit, "limit", 4, "K: the most queries running at once, fleet-wide")
	fs.StringVar(&o.Redis, "redis", "", "Redis URL (default: an in-process miniredis on 127.0.0.1)")
	fs.StringVar(&o.Driver, "driver", "sqlite", "database/sql driver: sqlite or pgx")
	fs.StringVar(&o.DSN, "dsn", "", "data source name (default with sqlite: a file in a temporary directory)")
	fs.StringVar(&o.Table, "table", "distsem_mapreduce", "table to create and read (dropped and re-created)")
	fs.StringVar(&o.Name, "name", "mapreduce", "semaphore name in Redis; its limit is set to -limit")
	fs.Int64Var(&o.Rows, "rows", 200000, "rows in the table")
	fs.Int64Var(&o.Page, "page", 2000, "rows per page (one query each)")
	fs.DurationVar(&o.Slow, "slow", 50*time.Millisecond, "each page query takes at least this long on the database (0: no delay)")
	fs.Float64Var(&o.Skew, "skew", 0.5, "share of the pages that the first subtask reads, as a skewed key gives one\nsubtask more than its part; the others share the rest (0: all share evenly)")
	fs.StringVar(&o.Mode, "mode", "semaphore", "semaphore (sqlmw + Redis), setmaxopen (per-process SetMaxOpenConns(max(1, limit/workers))),\npipe (limit tokens passed through an OS pipe that the workers share: the cheapest limit\nbetween processes of one machine, a ceiling for measurements), list (limit tokens in a\nRedis list, BLPOP and RPUSH: the cheapest hand-off through Redis, for measurements) or none")
	fs.BoolVar(&o.compare, "compare", true, "with -mode semaphore: then run the same job with -mode setmaxopen and print both")
	fs.StringVar(&o.chart, "chart", "", "draw the concurrent queries over time to this .svg or .png file")
	fs.BoolVar(&o.Leased, "leased", false, "with -mode semaphore: the semaphore's leased-shares mode (redissem.NewLeased)")
	fs.BoolVar(&o.Adaptive, "adaptive", false, "with -mode semaphore: the limit adapts to the database's latency, from -limit on (core/adaptive)")
	fs.DurationVar(&o.progress, "progress", 500*time.Millisecond, "progress report interval (0: none)")
	fs.BoolVar(&o.verbose, "v", false, "also print the Redis client's own log lines")
	if err := cli.Parse(fs, args, stdout, usage); err != nil {
		return o, err
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"-workers", int64(o.Workers)}, {"-concurrency", int64(o.Concurrency)}, {"-limit", o.Limit}, {"-rows", o.Rows}, {"-page", o.Page}} {
		if f.v < 1 {
			return o, cli.Usagef("%s %d: must be at least 1", f.name, f.v)
		}
	}
	switch {
	case o.Slow < 0:
		return o, cli.Usagef("-slow %v: must not be negative", o.Slow)
	case !(o.Skew >= 0 && o.Skew < 1):
		return o, cli.Usagef("-skew %v: want a share from 0 to below 1", o.Skew)
	case o.progress < 0:
		return o, cli.Usagef("-progress %v: must not be negative", o.progress)
	case o.Mode != "semaphore" && o.Mode != "setmaxopen" && o.Mode != "pipe" && o.Mode != "list" && o.Mode != "none":
		return o, cli.Usagef("-mode %q: want semaphore, setmaxopen, pipe, list or none", o.Mode)
	case o.Mode == "pipe" && o.Limit > maxPipeTokens:
		return o, cli.Usagef("-mode pipe holds at most %d tokens, not -limit %d", maxPipeTokens, o.Limit)
	case o.Adaptive && o.Mode != "semaphore":
		return o, cli.Usagef("-adaptive needs -mode semaphore")
	case o.Driver != "sqlite" && o.Driver != "pgx":
		return o, cli.Usagef("-driver %q: want sqlite or pgx", o.Driver)
	case o.Driver == "pgx" && o.DSN == "":
		return o, cli.Usagef("-driver pgx needs -dsn")
	case o.chart != "" && chartFormat(o.chart) != "svg" && chartFormat(o.chart) != "png":
		return o, cli.Usagef("-chart %q: the file name must end in .svg or .png", o.chart)
	}
	if o.Redis != "" {
		if _, err := redis.ParseURL(o.Redis); err != nil {
			return o, cli.Usagef("-redis %q: %v", o.Redis, err)
		}
	}
	return o, nil
}

// chartFormat is the image format that the chart's file name asks for.
func chartFormat(name string) string {
	return strings.ToLower(strings.TrimPrefix(filepath.Ext(name), "."))
}
