package main

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	ngsqlmw "github.com/ngrok/sqlmw"
	"github.com/redis/go-redis/v9"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/sqlmw"
)

// workerConfig is what the parent tells a subtask, as JSON in workerEnv.
type workerConfig struct {
	Driver, DSN, Table string
	Mode               string // semaphore, setmaxopen, pipe, list or none
	Redis, Name        string
	Limit              int64
	Workers, Index     int     // this worker handles pagesOf(Index)
	Skew               float64 // -skew: the share of the pages of worker 0
	Concurrency        int
	Rows, Page         int64
	Slow               time.Duration
	Leased             bool // -leased: redissem.NewLeased
	Adaptive           bool // -adaptive: core/adaptive
}

// report is one line of a worker's report to the parent: a JSON object
// per line, like bench/load's results. Kind says which fields are set:
//
//	{"kind":"start","at":<unix ns>}   a query started on the database
//	{"kind":"end","at":<unix ns>}     a query ended (its rows were closed)
//	{"kind":"page","rows":N,"sum":S}  a page was processed
//	{"kind":"done","permit_wait":<ns>,"permits":N,"pool_wait":<ns>}
//	                                  the worker is done; always its last line
type report struct {
	Kind       string        `json:"kind"`
	At         int64         `json:"at,omitempty"`
	Rows       int64         `json:"rows,omitempty"`
	Sum        int64         `json:"sum,omitempty"`
	PermitWait time.Duration `json:"permit_wait,omitempty"`
	Permits    int64         `json:"permits,omitempty"`
	PoolWait   time.Duration `json:"pool_wait,omitempty"`
	Limit      int64         `json:"limit,omitempty"` // kindLimit
}

// The kinds of report.
const (
	kindStart = "start"
	kindEnd   = "end"
	kindPage  = "page"
	kindDone  = "done"
)

// reportWriter sends the worker's reports to the parent, one JSON line
// each, flushed at once.
type reportWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	enc *json.Encoder
}

func newReportWriter(w io.Writer) *reportWriter {
	bw := bufio.NewWriter(w)
	return &reportWriter{w: bw, enc: json.NewEncoder(bw)}
}

func (r *reportWriter) send(rep report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.enc.Encode(rep) // a report has no value that fails to encode
	_ = r.w.Flush()
}

func (r *reportWriter) at(kind string) { r.send(report{Kind: kind, At: time.Now().UnixNano()}) }

// probe marks when queries really run on the database: it sits between
// the throttled driver and the real one, so it sees a query only after its
// permit was granted, and its end before the permit is released.
type probe struct {
	ngsqlmw.NullInterceptor
	out *reportWriter
}

func (p probe) ConnQueryContext(ctx context.Context, conn driver.QueryerContext, q string, args []driver.NamedValue) (context.Context, driver.Rows, error) {
	p.out.at(kindStart)
	rows, err := conn.QueryContext(ctx, q, args)
	if err != nil {
		p.out.at(kindEnd)
	}
	return ctx, rows, err
}

func (p probe) StmtQueryContext(ctx context.Context, stmt driver.StmtQueryContext, q string, args []driver.NamedValue) (context.Context, driver.Rows, error) {
	p.out.at(kindStart)
	rows, err := stmt.QueryContext(ctx, args)
	if err != nil {
		p.out.at(kindEnd)
	}
	return ctx, rows, err
}

func (p probe) RowsClose(_ context.Context, rows driver.Rows) error {
	err := rows.Close()
	p.out.at(kindEnd)
	return err
}

func workerMain(ctx context.Context, cfgJSON string, stdout io.Writer) error {
	var cfg workerConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		return err
	}
	out := newReportWriter(stdout)

	// The real driver, wrapped by the probe.
	raw, err := sql.Open(cfg.Driver, cfg.DSN)
	if err != nil {
		return err
	}
	probed := ngsqlmw.Driver(raw.Driver(), probe{out: out})
	_ = raw.Close()
	connector, err := probed.(driver.DriverContext).OpenConnector(cfg.DSN)
	if err != nil {
		return err
	}

	var db *sql.DB
	var tok gate // -mode pipe, -mode list
	var permitWait, permits atomic.Int64
	stopReports := func() error { return nil } // ends what reports in the background
	switch cfg.Mode {
	case "semaphore":
		opt, err := redis.ParseURL(cfg.Redis)
		if err != nil {
			return err
		}
		client := redis.NewClient(opt)
		defer client.Close()
		sem := newSem(client, cfg.Name, cfg.Limit, cfg.Leased, redissem.WithObserver(core.ObserverFunc(func(e core.Event) {
			if e.Kind == core.EventAcquired {
				permitWait.Add(int64(e.Wait))
				permits.Add(1)
			}
		})))
		defer sem.Close()
		if !cfg.Adaptive {
			db = sqlmw.OpenDB(connector, sem)
			break
		}
		lim, err := adaptiveSem(client, cfg.Name, sem, out)
		if err != nil {
			return err
		}
		defer lim.Close()
		stopReports = lim.Close // its decisions are reports: none after done
		db = sqlmw.OpenDB(connector, lim)
	case "setmaxopen":
		db = sql.OpenDB(connector)
		db.SetMaxOpenConns(cfg.maxOpenPerProcess())
	case "pipe":
		db = sql.OpenDB(connector)
		t := inheritedTokens()
		defer t.Close()
		tok = t
	case "list":
		t, err := dialListTokens(cfg)
		if err != nil {
			return err
		}
		defer t.Close()
		db = sql.OpenDB(connector)
		tok = t
	default:
		db = sql.OpenDB(connector)
	}
	defer db.Close()
	db.SetMaxIdleConns(cfg.Concurrency)

	pages := make(chan int64)
	go func() {
		defer close(pages)
		for _, p := range cfg.pagesOf(cfg.Index) {
			select {
			case pages <- p:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Concurrency)
	for range cfg.Concurrency {
		wg.Go(func() {
			for p := range pages {
				if err := processPage(ctx, db, tok, cfg, p, out); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	_ = stopReports()
	out.send(report{Kind: kindDone, PermitWait: time.Duration(permitWait.Load()), Permits: permits.Load(), PoolWait: db.Stats().WaitDuration})
	return nil
}

// maxOpenPerProcess is the static split of -mode setmaxopen: K/workers
// connections per worker, and at least 1, or it could not run at all.
func (cfg workerConfig) maxOpenPerProcess() int { return int(max(1, cfg.Limit/int64(cfg.Workers))) }

// pageCount is the number of pages of the table.
func (cfg workerConfig) pageCount() int64 { return (cfg.Rows + cfg.Page - 1) / cfg.Page }

// pagesOf returns the pages that worker i reads. With Skew 0 (or one
// worker) the workers take turns: worker i reads pages i, i+Workers, ...
// Otherwise worker 0 reads the first Skew of the pages (rounded) and the
// others take turns over the rest, as a skewed key makes one subtask of a
// real job much larger than the others.
func (cfg workerConfig) pagesOf(i int) []int64 {
	n, w := cfg.pageCount(), int64(cfg.Workers)
	first, step, end := int64(i), w, n // turns over all the pages
	if cfg.Skew > 0 && w > 1 {
		n0 := min(n, int64(math.Round(cfg.Skew*float64(n))))
		if i == 0 {
			first, step, end = 0, 1, n0
		} else {
			first, step = n0+int64(i-1), w-1
		}
	}
	var pages []int64
	for p := first; p < end; p += step {
		pages = append(pages, p)
	}
	return pages
}

// processPage is the map step: read one page and reduce it to a count and
// a sum. With tok (-mode pipe, list), the query holds one of its tokens.
func processPage(ctx context.Context, db *sql.DB, tok gate, cfg workerConfig, page int64, out *reportWriter) error {
	if tok != nil {
		if err := tok.take(ctx); err != nil {
			return fmt.Errorf("page %d: token: %w", page, err)
		}
		defer tok.put()
	}
	lo := page * cfg.Page
	hi := min(lo+cfg.Page, cfg.Rows)
	q, args := pageQuery(cfg.Driver, cfg.Table, lo, hi, cfg.Slow)
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("page %d: %w", page, err)
	}
	defer rows.Close()
	var n, sum int64
	for rows.Next() {
		var id, amount int64
		if err := rows.Scan(&id, &amount); err != nil {
			return err
		}
		n++
		sum += amount
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("page %d: %w", page, err)
	}
	out.send(report{Kind: kindPage, At: time.Now().UnixNano(), Rows: n, Sum: sum})
	return nil
}
