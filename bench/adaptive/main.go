// Command adaptive measures core/adaptive against PostgreSQL: a fleet of
// load processes (this binary again) runs CPU-heavy queries through sqlmw
// under one of the limits below, and the parent records, per second, the
// throughput, the p99 of the queries' time on the database, the number of
// workload queries active in PostgreSQL (pg_stat_activity) and the
// semaphore's limit.
//
//	go run ./adaptive -redis redis://127.0.0.1:7600 -dsn postgres://postgres@127.0.0.1:7650/postgres \
//	    -mode static -limits 1,2,4,8,16,32,64 -duration 12s
//	go run ./adaptive ... -mode adaptive -limit 64 -duration 40s -change 20s -label from64 -plot from64.svg
//	go run ./adaptive draw -in data/adaptive.jsonl -out .
//
// Modes: static (redissem.New with -limit), adaptive (the same, wrapped
// by adaptive.New from -limit on), monitor (adaptive.WithMonitorOnly over
// -limit), failsafe (no distsem: failsafe-go's AdaptiveLimiter, with its
// defaults, in each process). -change T starts a competing load on the
// same PostgreSQL at T; -kill T sends SIGKILL, at T, to the process that
// computed the last window. Each run appends one JSON line to -out, with
// its -label; `draw` draws each labelled run of such a file to
// <label>.svg (limit, throughput and p99 per second, the change and the
// kill marked).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

const childEnv = "DISTSEM_BENCH_ADAPTIVE_CHILD"

type options struct {
	redis, dsn, mode, out, plot, name string
	label                             string
	query                             string
	tolerance, errorRate              float64
	baseline                          time.Duration
	limits                            []int64
	procs, workers, compete           int
	queryN                            int64
	duration, change, kill, warmup    time.Duration
	repeat                            int
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == "draw" {
		if err := drawMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "adaptive draw:", err)
			os.Exit(1)
		}
		return
	}
	if cfg := os.Getenv(childEnv); cfg != "" {
		if err := childMain(ctx, cfg, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "adaptive child:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	var limits string
	flag.StringVar(&o.redis, "redis", "redis://127.0.0.1:7600", "Redis URL")
	flag.StringVar(&o.dsn, "dsn", "postgres://postgres@127.0.0.1:7650/postgres", "PostgreSQL DSN")
	flag.StringVar(&o.mode, "mode", "static", "static, adaptive, monitor or failsafe")
	flag.StringVar(&limits, "limits", "", "comma-separated limits: one run each (default: -limit)")
	limit := flag.Int64("limit", 64, "the limit (static, monitor), the starting limit (adaptive)")
	flag.IntVar(&o.procs, "procs", 4, "load processes")
	flag.IntVar(&o.workers, "workers", 32, "closed-loop callers per process")
	flag.IntVar(&o.compete, "compete", 16, "with -change: callers of the competing load")
	flag.StringVar(&o.query, "q", "conflict", "the load's query: conflict, sort or series (see queries)")
	flag.Float64Var(&o.tolerance, "tolerance", 0, "adaptive.WithTolerance (0: the default)")
	flag.Float64Var(&o.errorRate, "error-rate", 0, "adaptive.WithErrorRate (0: the default)")
	flag.DurationVar(&o.baseline, "baseline", 0, "adaptive.WithBaseline (0: none)")
	flag.Int64Var(&o.queryN, "n", 20000, "rows of the query's generate_series")
	flag.DurationVar(&o.duration, "duration", 30*time.Second, "length of a run")
	flag.DurationVar(&o.warmup, "warmup", 3*time.Second, "the start of a static run left out of its figures")
	flag.DurationVar(&o.change, "change", 0, "start the competing load at this time (0: none)")
	flag.DurationVar(&o.kill, "kill", 0, "SIGKILL the process that computed the last window at this time (0: none)")
	flag.IntVar(&o.repeat, "repeat", 1, "run the list of limits this many times, interleaved")
	flag.StringVar(&o.out, "out", "adaptive-results.jsonl", "append each run's result here")
	flag.StringVar(&o.plot, "plot", "", "draw each run to this .svg (with several runs: NAME-<mode>-<limit>-<rep>.svg)")
	flag.StringVar(&o.label, "label", "", "name the run in -out (draw writes <label>.svg)")
	flag.Parse()
	if queries[o.query] == "" {
		fmt.Fprintf(os.Stderr, "adaptive: unknown query %q\n", o.query)
		os.Exit(2)
	}
	o.limits = []int64{*limit}
	if limits != "" {
		o.limits = nil
		for _, f := range strings.Split(limits, ",") {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil || n < 1 {
				fmt.Fprintf(os.Stderr, "adaptive: bad limit %q\n", f)
				os.Exit(2)
			}
			o.limits = append(o.limits, n)
		}
	}
	if err := runAll(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "adaptive:", err)
		os.Exit(1)
	}
}

func runAll(ctx context.Context, o options) error {
	for rep := range o.repeat {
		for _, l := range o.limits {
			o.name = fmt.Sprintf("bench-adaptive-%d", time.Now().UnixNano())
			r, err := runOnce(ctx, o, l)
			if err != nil {
				return err
			}
			r.Rep = rep
			if err := r.save(o.out); err != nil {
				return err
			}
			r.printSummary(os.Stdout)
			if o.plot != "" {
				name := o.plot
				if len(o.limits) > 1 || o.repeat > 1 {
					name = fmt.Sprintf("%s-%s-%d-%d.svg", strings.TrimSuffix(o.plot, ".svg"), o.mode, l, rep)
				}
				if err := drawRun(r, name); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// drawMain draws each labelled run of a results file.
func drawMain(args []string) error {
	fs := flag.NewFlagSet("draw", flag.ExitOnError)
	in := fs.String("in", "adaptive-results.jsonl", "the runs, as -out wrote them")
	dir := fs.String("out", ".", "directory for the SVG files")
	_ = fs.Parse(args)
	f, err := os.Open(*in)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	for {
		var r result
		if err := dec.Decode(&r); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if r.Label == "" {
			continue
		}
		if err := drawRun(&r, filepath.Join(*dir, r.Label+".svg")); err != nil {
			return err
		}
	}
}
