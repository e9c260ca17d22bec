package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core/redissem"
)

// run is what the parent records of one run.
type run struct {
	mu        sync.Mutex
	start     time.Time
	queries   []line // the queries that ended, in arrival order
	decisions []line
	recs      []line
	limits    []sample // the semaphore's limit, every 250ms
	active    []sample // workload queries active in PostgreSQL, every 200ms
	probes    []sample // the time of the probe query, ns, every 250ms (with -change)
	killed    int      // the process killed, -1 for none
	killedAt  time.Duration
}

type sample struct {
	At time.Duration `json:"t"`
	V  int64         `json:"v"`
}

func (r *run) since(ns int64) time.Duration { return time.Unix(0, ns).Sub(r.start) }

func runOnce(ctx context.Context, o options, limit int64) (*result, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	opt, err := redis.ParseURL(o.redis)
	if err != nil {
		return nil, err
	}
	client := redis.NewClient(opt)
	defer client.Close()
	sem := redissem.New(client, o.name, limit)
	defer sem.Close()
	if err := sem.SetLimit(ctx, limit); err != nil {
		return nil, err
	}
	pg, err := sql.Open("pgx", o.dsn)
	if err != nil {
		return nil, err
	}
	defer pg.Close()
	if _, err := pg.ExecContext(ctx, conflictSetup); err != nil {
		return nil, err
	}

	r := &run{killed: -1, start: time.Now()}
	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var cmds []*exec.Cmd
	var readers sync.WaitGroup
	for i := range o.procs {
		cfg, _ := json.Marshal(childConfig{Index: i, Mode: o.mode, Redis: o.redis, DSN: o.dsn, Name: o.name,
			Limit: limit, Workers: o.workers, Query: o.query, QueryN: o.queryN, Tolerance: o.tolerance, ErrorRate: o.errorRate, Baseline: o.baseline})
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), childEnv+"="+string(cfg))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		cmds = append(cmds, cmd)
		readers.Go(func() { r.read(stdout) })
	}
	var bg sync.WaitGroup
	bg.Go(func() { r.sampleLimit(ctx, sem) })
	bg.Go(func() { r.sampleActive(ctx, pg) })
	if o.change > 0 {
		bg.Go(func() { compete(ctx, pg, o, r.start.Add(o.change)) })
		bg.Go(func() { r.probe(ctx, o) })
	}
	if o.kill > 0 {
		bg.Go(func() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(r.start.Add(o.kill))):
			}
			r.mu.Lock()
			if n := len(r.decisions); n > 0 {
				r.killed, r.killedAt = r.decisions[n-1].Proc, time.Since(r.start)
				_ = cmds[r.killed].Process.Kill()
			}
			r.mu.Unlock()
		})
	}
	<-ctx.Done()
	for i, c := range cmds {
		if i != r.killed {
			_ = c.Process.Signal(syscall.SIGINT)
		}
	}
	readers.Wait()
	var errs []error
	for i, c := range cmds {
		if err := c.Wait(); err != nil && i != r.killed {
			errs = append(errs, fmt.Errorf("process %d: %w", i, err))
		}
	}
	bg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r.result(o, limit), nil
}

// read consumes one child's lines until EOF.
func (r *run) read(rd interface{ Read([]byte) (int, error) }) {
	sc := bufio.NewScanner(rd)
	for sc.Scan() {
		var l line
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		r.mu.Lock()
		switch l.Kind {
		case "":
			r.queries = append(r.queries, l)
		case "dec":
			r.decisions = append(r.decisions, l)
		case "rec":
			r.recs = append(r.recs, l)
		}
		r.mu.Unlock()
	}
}

// every calls f every d until ctx ends.
func every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

func (r *run) sampleLimit(ctx context.Context, sem *redissem.Semaphore) {
	every(ctx, 250*time.Millisecond, func() {
		if st, err := sem.Stats(ctx); err == nil {
			r.mu.Lock()
			r.limits = append(r.limits, sample{time.Since(r.start), st.Limit})
			r.mu.Unlock()
		}
	})
}

func (r *run) sampleActive(ctx context.Context, pg *sql.DB) {
	every(ctx, 200*time.Millisecond, func() {
		var n int64
		err := pg.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE state = 'active'
			AND pid <> pg_backend_pid() AND query LIKE '%/*bench_adaptive*/%'`).Scan(&n)
		if err == nil {
			r.mu.Lock()
			r.active = append(r.active, sample{time.Since(r.start), n})
			r.mu.Unlock()
		}
	})
}

// probe runs the sort query alone (not under the limit, tagged so that
// it is not counted as the load's), one at a time with a pause of 250ms,
// on a connection of its own: its time is the resource's query time at
// the moment, whatever limit the load runs under, and shows how much the
// competing load slowed the database.
func (r *run) probe(ctx context.Context, o options) {
	pg, err := sql.Open("pgx", o.dsn)
	if err != nil {
		return
	}
	defer pg.Close()
	q := strings.Replace(queries["sort"], "/*bench_adaptive*/", "/*probe*/", 1)
	every(ctx, 250*time.Millisecond, func() {
		var s int64
		start := time.Now()
		if pg.QueryRowContext(ctx, q, o.queryN).Scan(&s) == nil {
			r.mu.Lock()
			r.probes = append(r.probes, sample{time.Since(r.start), int64(time.Since(start))})
			r.mu.Unlock()
		}
	})
}

// compete runs o.compete callers of the same query, unthrottled and
// untagged, from at until ctx ends: a competing load on the same
// PostgreSQL.
func compete(ctx context.Context, pg *sql.DB, o options, at time.Time) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Until(at)):
	}
	// CPU and memory only (no row of the load's): the load's queries get
	// slower, not more conflicts.
	q := strings.Replace(queries["sort"], "/*bench_adaptive*/", "/*competing*/", 1)
	var wg sync.WaitGroup
	for range o.compete {
		wg.Go(func() {
			for ctx.Err() == nil {
				var s int64
				_ = pg.QueryRowContext(ctx, q, o.queryN).Scan(&s)
			}
		})
	}
	wg.Wait()
}
