// Command mapreduce is distsem's main example: a MapReduce job whose
// subtasks, separate OS processes, together never run more than K queries
// at once against the database.
//
//	go run ./examples/mapreduce
//
// runs with no setup: an SQLite file in a temporary directory and an
// in-process Redis (miniredis) on 127.0.0.1. The parent creates a table,
// splits it into pages and starts -workers subtasks (this binary again, in
// worker mode), each with -concurrency goroutines that read pages through
// the sqlmw driver, throttled by one Redis semaphore of -limit permits.
// Against a real deployment:
//
//	go run ./examples/mapreduce -driver pgx -dsn postgres://... -redis redis://127.0.0.1:6379 -slow 100ms
//
// By default the fleet is one that a per-process split of K cannot serve:
// 6 subtasks for K = 4, and a skewed split of the pages (-skew), the first
// subtask reading half of them, as a skewed key gives one subtask of a
// real job more than its part. The job then runs a second time with
// -mode setmaxopen, each subtask limited by SetMaxOpenConns(max(1,
// K/workers)) instead of the semaphore, and a table compares the runs: 6
// subtasks of at least 1 connection run more than K queries at once, and
// once the small subtasks are done the first one runs alone on one
// connection while the other slots stay idle. -compare=false runs the job
// once.
//
// -slow D makes every page query take at least D inside the database:
// pg_sleep on PostgreSQL; on SQLite, which runs inside each worker, a SQL
// function that sleeps within the statement.
//
// -mode setmaxopen runs the job limited only by that per-process
// SetMaxOpenConns, and -mode none without any limit. -mode pipe passes K
// tokens through an OS pipe that the workers share, one read before each
// query and one write after it: a limit between processes of one machine
// with no network and no server, the ceiling of what any limit across
// processes can reach. -mode list passes them through a Redis list (BLPOP
// and RPUSH): the cheapest hand-off through Redis, with none of the
// semaphore's guarantees. Both are for measurements. -chart out.svg draws
// the number of queries running fleet-wide over time, for each run.
// Workers report when each query really starts and ends on the database
// (after its permit is granted, before it is released), so the figures
// hold for the whole fleet; the instants come from each process's clock,
// which is one clock on one machine.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/examples/internal/cli"
)

// workerEnv carries a worker's configuration; its presence selects worker
// mode.
const workerEnv = "DISTSEM_MAPREDUCE_WORKER"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if cfg := os.Getenv(workerEnv); cfg != "" {
		cli.QuietRedis(os.Getenv(verboseEnv) != "")
		if err := workerMain(ctx, cfg, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "mapreduce worker:", err)
			os.Exit(1)
		}
		return
	}
	o, err := parseFlags(os.Args[1:], os.Stdout)
	if err == nil {
		// Process-wide, so here rather than in run, which tests call.
		cli.QuietRedis(o.verbose)
		if o.verbose {
			os.Setenv(verboseEnv, "1") // for the workers too
		}
		_, err = job(ctx, o, os.Stdout, os.Stderr)
	}
	os.Exit(cli.ExitCode("mapreduce", err, os.Stderr))
}

// run is the parent: it prepares the data, runs the workers and reports.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (*summary, error) {
	o, err := parseFlags(args, stdout)
	if err != nil {
		return nil, err
	}
	return job(ctx, o, stdout, stderr)
}

// job runs the job that o describes, and with o.compare in -mode
// semaphore the same job again with -mode setmaxopen.
func job(ctx context.Context, o options, stdout, stderr io.Writer) (*summary, error) {
	if o.DSN == "" {
		dir, err := os.MkdirTemp("", "distsem-mapreduce-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		o.DSN = "file:" + filepath.Join(dir, "mapreduce.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	}
	wantRows, wantSum, err := setupTable(ctx, o.Driver, o.DSN, o.Table, o.Rows)
	if err != nil {
		return nil, err
	}
	if o.Driver != "sqlite" {
		defer dropTable(o.Driver, o.DSN, o.Table)
	}
	if o.Mode == "semaphore" || o.Mode == "list" {
		if o.Redis == "" {
			m := miniredis.NewMiniRedis()
			if err := m.StartAddr("127.0.0.1:0"); err != nil {
				return nil, err
			}
			defer m.Close()
			o.Redis = "redis://" + m.Addr()
		}
	}
	if o.Mode == "semaphore" {
		if err := setLimit(ctx, o.Redis, o.Name, o.Limit, o.Leased); err != nil {
			return nil, err
		}
	}
	mode := o.Mode
	if o.Leased {
		mode += " (leased shares)"
	}
	if o.Adaptive {
		mode += " (adaptive)"
	}
	fmt.Fprintf(stdout, "mapreduce: %d rows, %d rows per page, %d workers x %d goroutines%s, limit %d, mode %s, driver %s, slow %v\n",
		o.Rows, o.Page, o.Workers, o.Concurrency, o.skewText(), o.Limit, mode, o.Driver, o.Slow)
	s, err := runOnce(ctx, o, wantRows, wantSum, stdout, stderr)
	if err != nil {
		return nil, err
	}
	s.print(stdout)
	if o.compare && o.Mode == "semaphore" {
		c := o
		c.Mode, c.Leased = "setmaxopen", false
		fmt.Fprintf(stdout, "compare: the same job with -mode setmaxopen, SetMaxOpenConns(%d) in each of the %d workers instead of the semaphore\n",
			c.maxOpenPerProcess(), c.Workers)
		if s.Compared, err = runOnce(ctx, c, wantRows, wantSum, stdout, stderr); err != nil {
			return s, err
		}
		printComparison(stdout, s, s.Compared)
	}
	if o.chart != "" {
		f, err := os.Create(o.chart)
		if err != nil {
			return s, err
		}
		if err := errors.Join(writeChart(f, s, chartFormat(o.chart)), f.Close()); err != nil {
			return s, err
		}
		fmt.Fprintf(stdout, "  chart          %s\n", o.chart)
	}
	for _, r := range []*summary{s, s.Compared} {
		if r != nil && (r.Rows != wantRows || r.Sum != wantSum) {
			return s, fmt.Errorf("the %s run's result does not match the table", r.Mode)
		}
	}
	return s, nil
}

// runOnce runs the workers of one job in mode o.Mode and returns its
// summary.
func runOnce(ctx context.Context, o options, wantRows, wantSum int64, stdout, stderr io.Writer) (*summary, error) {
	s := &summary{Mode: o.Mode, Limit: o.Limit, Workers: o.Workers, Concurrency: o.Concurrency, WantRows: wantRows, WantSum: wantSum}
	col := &collector{}
	start := time.Now()
	if err := runWorkers(ctx, o, col, stdout, stderr); err != nil {
		return nil, err
	}
	end := time.Now()
	s.Elapsed, s.startNanos, s.endNanos = end.Sub(start), start.UnixNano(), end.UnixNano()
	col.summarize(s)
	return s, nil
}

// skewText describes -skew for the job's first line.
func (o options) skewText() string {
	if o.Skew == 0 || o.Workers == 1 {
		return ""
	}
	return fmt.Sprintf(" (the first reads %.0f%% of the pages)", 100*o.Skew)
}

// setLimit makes the semaphore's limit in Redis -limit, whatever an
// earlier run stored.
func setLimit(ctx context.Context, url, name string, limit int64, leased bool) error {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	client := redis.NewClient(opt)
	defer client.Close()
	// A first PING names the server in the error when it cannot be reached,
	// before any semaphore is made.
	if err := client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis %s: %w", opt.Addr, err)
	}
	sem := newSem(client, name, limit, leased)
	defer sem.Close()
	return sem.SetLimit(ctx, limit)
}

// jobSem is the job's semaphore, in either mode.
type jobSem interface {
	core.LimitSemaphore
	Close() error
}

// newSem returns the job's semaphore: in the leased-shares mode
// (redissem.NewLeased) or the default one (redissem.New).
func newSem(client redis.UniversalClient, name string, limit int64, leased bool, opts ...redissem.Option) jobSem {
	if leased {
		return redissem.NewLeased(client, name, limit, opts...)
	}
	return redissem.New(client, name, limit, opts...)
}

func runWorkers(ctx context.Context, o options, col *collector, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, o.Workers)
	var tok *tokens
	if o.Mode == "pipe" {
		if tok, err = newTokenPipe(o.Limit); err != nil {
			return err
		}
		defer tok.Close()
	}
	if o.Mode == "list" {
		if err := newListTokens(ctx, o.Redis, o.tokensKey(), o.Limit); err != nil {
			return err
		}
	}
	for i := range o.Workers {
		cfg := o.workerConfig
		cfg.Index = i
		js, _ := json.Marshal(cfg)
		cmd := exec.CommandContext(ctx, exe)
		cmd.Env = append(os.Environ(), workerEnv+"="+string(js))
		if tok != nil {
			cmd.ExtraFiles = tok.files()
		}
		cmd.Stderr = stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		go func() {
			rerr := col.read(i, out)
			if rerr != nil {
				cmd.Process.Kill() // it may be blocked writing reports nobody reads
			}
			done <- errors.Join(rerr, cmd.Wait())
		}()
	}
	pages := o.pageCount()
	var tick <-chan time.Time
	if o.progress > 0 {
		t := time.NewTicker(o.progress)
		defer t.Stop()
		tick = t.C
	}
	start := time.Now()
	for finished := 0; finished < o.Workers; {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("worker: %w", err)
			}
			finished++
		case <-tick:
			p, rows, inFlight := col.progress()
			fmt.Fprintf(stdout, "  pages %d/%d  %.0f rows/s  %d in flight\n",
				p, pages, float64(rows)/time.Since(start).Seconds(), inFlight)
		}
	}
	return nil
}
