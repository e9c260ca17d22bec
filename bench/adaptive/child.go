package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/adaptive"
	"github.com/distsem/distsem/core/adaptive/redisstore"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/sqlmw"
)

// childConfig is what the parent tells a load process, as JSON in childEnv.
type childConfig struct {
	Index     int
	Mode      string // static, adaptive, monitor, failsafe
	Redis     string
	DSN       string
	Name      string
	Limit     int64
	Workers   int
	Query     string        // a key of queries
	Tolerance float64       // adaptive.WithTolerance; 0: its default
	ErrorRate float64       // adaptive.WithErrorRate; 0: its default
	Baseline  time.Duration // adaptive.WithBaseline; 0: none
	QueryN    int64
}

// line is one line a child writes: a query that ended (Kind ""), or a
// decision of the adaptive limit ("dec") or its recommendation ("rec").
type line struct {
	Kind  string `json:"k,omitempty"`
	Proc  int    `json:"p"`
	At    int64  `json:"t"`             // unix ns
	Lat   int64  `json:"l,omitempty"`   // the query's time on the database, ns
	Err   bool   `json:"e,omitempty"`   // the query failed
	Limit int64  `json:"lim,omitempty"` // dec, rec
	// dec: the decision's reason, the latency it used and the baseline
	Reason string  `json:"r,omitempty"`
	LatMS  float64 `json:"lat_ms,omitempty"`
	BaseMS float64 `json:"base_ms,omitempty"`
}

type out struct {
	mu  sync.Mutex
	w   *bufio.Writer
	enc *json.Encoder
}

func (o *out) send(l line) {
	o.mu.Lock()
	defer o.mu.Unlock()
	_ = o.enc.Encode(l)
}

func (o *out) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	_ = o.w.Flush()
}

// queries are the loads (-q): series is CPU alone (a generate_series
// summed); sort hashes and sorts $1 rows, spilling to a temporary file
// beyond work_mem, so many at once contend for the cores, the memory and
// the disk.
var queries = map[string]string{
	"series":   `SELECT /*bench_adaptive*/ sum(i) FROM generate_series(1, $1) i`,
	"sort":     `SELECT /*bench_adaptive*/ count(*) FROM (SELECT i FROM generate_series(1, $1) i ORDER BY md5(i::text)) s`,
	"conflict": `SELECT /*bench_adaptive*/ bench_adaptive_work($1)`,
}

// conflictSetup makes the conflict load: sort's work between reading the
// version of one of 64 rows and updating it, an optimistic transaction
// that fails (SQLSTATE 40001) when another changed the row meanwhile. The
// more run at once, the more of their work is wasted: throughput peaks,
// then degrades.
const conflictSetup = `
CREATE TABLE IF NOT EXISTS bench_adaptive_hot (id int PRIMARY KEY, ver bigint NOT NULL);
INSERT INTO bench_adaptive_hot SELECT i, 0 FROM generate_series(1, 64) i ON CONFLICT DO NOTHING;
CREATE OR REPLACE FUNCTION bench_adaptive_work(n int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	k int := 1 + floor(random() * 64)::int;
	v bigint;
	c bigint;
BEGIN
	SELECT ver INTO v FROM bench_adaptive_hot WHERE id = k;
	SELECT count(*) INTO c FROM (SELECT i FROM generate_series(1, n) i ORDER BY md5(i::text)) s;
	UPDATE bench_adaptive_hot SET ver = ver + 1 WHERE id = k AND ver = v;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'conflict on row %', k USING ERRCODE = '40001';
	END IF;
	RETURN c;
END $$;`

func childMain(ctx context.Context, cfgJSON string, stdout io.Writer) error {
	var cfg childConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(stdout, 1<<16)
	o := &out{w: bw, enc: json.NewEncoder(bw)}
	defer o.flush()

	connector, err := pgxConnector(cfg.DSN)
	if err != nil {
		return err
	}
	var db *sql.DB
	var fs adaptivelimiter.AdaptiveLimiter[any]
	switch cfg.Mode {
	case "failsafe":
		db = sql.OpenDB(connector)
		fs = adaptivelimiter.NewWithDefaults[any]()
	default:
		opt, err := redis.ParseURL(cfg.Redis)
		if err != nil {
			return err
		}
		client := redis.NewClient(opt)
		defer client.Close()
		sem := redissem.New(client, cfg.Name, cfg.Limit)
		defer sem.Close()
		var s core.Semaphore = sem
		if cfg.Mode != "static" {
			var opts []adaptive.Option
			if cfg.Tolerance > 0 {
				opts = append(opts, adaptive.WithTolerance(cfg.Tolerance))
			}
			if cfg.ErrorRate > 0 {
				opts = append(opts, adaptive.WithErrorRate(cfg.ErrorRate))
			}
			if cfg.Baseline > 0 {
				opts = append(opts, adaptive.WithBaseline(cfg.Baseline))
			}
			if cfg.Mode == "monitor" {
				opts = append(opts, adaptive.WithMonitorOnly())
			}
			opts = append(opts, adaptive.WithObserver(adaptive.ObserverFunc(func(e adaptive.Event) {
				switch e.Kind {
				case adaptive.EventDecision:
					o.send(line{Kind: "dec", Proc: cfg.Index, At: time.Now().UnixNano(), Limit: e.Limit, Reason: e.Reason.String(),
						LatMS: float64(e.Latency) / 1e6, BaseMS: float64(e.Baseline) / 1e6})
				case adaptive.EventState:
					o.send(line{Kind: "rec", Proc: cfg.Index, At: time.Now().UnixNano(), Limit: e.Limit})
				}
			})))
			lim, err := adaptive.New(sem, redisstore.New(client, cfg.Name), opts...)
			if err != nil {
				return err
			}
			defer lim.Close()
			s = lim
		}
		db = sqlmw.OpenDB(connector, s)
	}
	defer db.Close()
	db.SetMaxIdleConns(cfg.Workers)

	stopFlush := make(chan struct{})
	var flusher sync.WaitGroup
	flusher.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				o.flush()
			case <-stopFlush:
				return
			}
		}
	})
	var wg sync.WaitGroup
	var errShown atomic.Int64 // the first errors go to stderr
	for range cfg.Workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				var p adaptivelimiter.Permit
				if fs != nil {
					var err error
					if p, err = fs.AcquirePermit(ctx); err != nil {
						continue
					}
				}
				start, end, err := runQuery(ctx, db, queries[cfg.Query], cfg.QueryN)
				if p != nil {
					p.Record()
				}
				if ctx.Err() != nil {
					return
				}
				if err != nil && errShown.Add(1) <= 3 {
					fmt.Fprintf(os.Stderr, "adaptive child %d: %v\n", cfg.Index, err)
				}
				o.send(line{Proc: cfg.Index, At: end.UnixNano(), Lat: int64(end.Sub(start)), Err: err != nil})
			}
		})
	}
	wg.Wait()
	close(stopFlush)
	flusher.Wait()
	return nil
}

// runQuery runs the load's query and returns when it reached the
// database and when its rows were closed: the semaphores' wait is inside
// QueryContext and their release after the rows' Close, so the probe in
// the connector, under the throttled driver, takes both instants.
func runQuery(ctx context.Context, db *sql.DB, query string, n int64) (start, end time.Time, err error) {
	ctx, span := withSpan(ctx)
	var sum int64
	err = db.QueryRowContext(ctx, query, n).Scan(&sum)
	start, end = span()
	return start, end, err
}
