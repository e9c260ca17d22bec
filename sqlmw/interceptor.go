package sqlmw

import (
	"context"
	"database/sql/driver"
	"reflect"
	"sync"
	"time"

	ngsqlmw "github.com/ngrok/sqlmw"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
)

// interceptor takes one permit per query. Queries carry their permit in the
// context they return, which ngrok/sqlmw hands to RowsClose; transactions in
// PerTransaction mode carry theirs in the context handed to TxCommit and
// TxRollback.
type interceptor struct {
	ngsqlmw.NullInterceptor
	sem core.Semaphore
	cfg config
	// ctl and kctl take the permits of sem and of cfg.keyed (nil if none).
	ctl, kctl *admit.Controller

	// PerTransaction mode only: the driver connections with an open
	// transaction, and the connection each prepared statement belongs to.
	mu    sync.Mutex
	inTx  map[any]struct{}
	stmts map[any]any
}

var _ ngsqlmw.Interceptor = (*interceptor)(nil)

func newInterceptor(sem core.Semaphore, opts []Option) *interceptor {
	cfg := buildConfig(opts)
	if isNil(sem) && cfg.keyed == nil {
		panic("sqlmw: a nil semaphore needs WithKeyed")
	}
	if isNil(sem) {
		sem = nil
	}
	i := &interceptor{sem: sem, cfg: cfg}
	if sem != nil {
		i.ctl = admit.New(admit.Global(sem), cfg.admitOptions()...)
	}
	if cfg.keyed != nil {
		i.kctl = admit.New(cfg.keyed, cfg.admitOptions()...)
	}
	if cfg.txMode == PerTransaction {
		i.inTx = make(map[any]struct{})
		i.stmts = make(map[any]any)
	}
	return i
}

func isNil(s core.Semaphore) bool {
	if s == nil {
		return true
	}
	v := reflect.ValueOf(s)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// permitKey and txKey are context keys; they hold the interceptor so that
// two stacked throttled drivers never take each other's permits.
type (
	permitKey struct{ i *interceptor }
	txKey     struct{ i *interceptor }
)

// acquire takes the permit of query, or returns nil if no semaphore applies.
func (i *interceptor) acquire(ctx context.Context, query string) (*core.Permit, error) {
	key := ""
	if i.cfg.classify != nil {
		key = i.cfg.classify(ctx, query)
	}
	if key == "" && i.sem == nil {
		return nil, nil
	}
	ctl := i.ctl
	if key != "" {
		ctl = i.kctl
	}
	t, err := ctl.Acquire(ctx, key)
	if err != nil {
		return nil, newError(err)
	}
	return t.Permit(), nil
}

// release gives p back with a context that outlives the query's. Its error
// is not returned: the query already succeeded (see WithReleaseTimeout).
func (i *interceptor) release(ctx context.Context, p *core.Permit) {
	if p == nil {
		return
	}
	if ctx == nil { // the legacy driver paths
		ctx = context.Background()
	}
	_ = p.ReleaseDetached(ctx, i.cfg.releaseTimeout)
}

func (i *interceptor) ConnExecContext(ctx context.Context, conn driver.ExecerContext, query string, args []driver.NamedValue) (_ driver.Result, err error) {
	if i.coveredByTx(conn) {
		return conn.ExecContext(ctx, query, args)
	}
	p, err := i.acquire(ctx, query)
	if err != nil {
		return nil, err
	}
	defer func() { i.release(withOutcome(ctx, err), p) }()
	return conn.ExecContext(ctx, query, args)
}

func (i *interceptor) ConnQueryContext(ctx context.Context, conn driver.QueryerContext, query string, args []driver.NamedValue) (context.Context, driver.Rows, error) {
	if i.coveredByTx(conn) {
		rows, err := conn.QueryContext(ctx, query, args)
		return ctx, rows, err
	}
	return i.query(ctx, query, func() (driver.Rows, error) { return conn.QueryContext(ctx, query, args) })
}

func (i *interceptor) StmtExecContext(ctx context.Context, stmt driver.StmtExecContext, query string, args []driver.NamedValue) (_ driver.Result, err error) {
	if i.stmtCoveredByTx(stmt) {
		return stmt.ExecContext(ctx, args)
	}
	p, err := i.acquire(ctx, query)
	if err != nil {
		return nil, err
	}
	defer func() { i.release(withOutcome(ctx, err), p) }()
	return stmt.ExecContext(ctx, args)
}

func (i *interceptor) StmtQueryContext(ctx context.Context, stmt driver.StmtQueryContext, query string, args []driver.NamedValue) (context.Context, driver.Rows, error) {
	if i.stmtCoveredByTx(stmt) {
		rows, err := stmt.QueryContext(ctx, args)
		return ctx, rows, err
	}
	return i.query(ctx, query, func() (driver.Rows, error) { return stmt.QueryContext(ctx, args) })
}

// query runs do under the permit of query. On success the permit goes into
// the returned ctx, which ngrok/sqlmw hands to RowsClose; on an error
// (driver.ErrSkip included) or a panic it is released at once.
//
// The permit is also released when ctx ends, even if RowsClose never runs:
// after a panic in a Scanner's Scan (or a Valuer), database/sql never drops
// its read lock on the Rows, so rows.Close blocks forever and never reaches
// RowsClose (an upstream bug; it happens without this package too).
// database/sql closes Rows when their ctx ends anyway, so releasing then
// changes nothing for a healthy query. A ctx that never ends is covered by
// WithMaxHold, after which the permit is released too.
func (i *interceptor) query(ctx context.Context, query string, do func() (driver.Rows, error)) (context.Context, driver.Rows, error) {
	p, err := i.acquire(ctx, query)
	if err != nil {
		return ctx, nil, err
	}
	held := false
	defer func() {
		if !held {
			i.release(withOutcome(ctx, err), p)
		}
	}()
	rows, err := do()
	if err != nil || p == nil {
		return ctx, rows, err
	}
	held = true
	h := &heldPermit{i: i, ctx: ctx, p: p}
	release := h.release // one func value for both triggers
	if ctx.Done() != nil {
		h.stopCtx = context.AfterFunc(ctx, release)
	}
	if i.cfg.maxHold > 0 {
		if i.cfg.afterFunc != nil {
			h.stopHold = i.cfg.afterFunc(i.cfg.maxHold, release)
		} else {
			h.hold = time.AfterFunc(i.cfg.maxHold, release)
		}
	}
	return context.WithValue(ctx, permitKey{i}, h), rows, nil
}

// heldPermit releases a query's permit once: when its Rows are closed, when
// the query's ctx ends, or after WithMaxHold, whichever comes first. Its
// fields are in one allocation: the once, and the stops of the last two
// (stopCtx, and hold or a test's stopHold; nil when not set).
type heldPermit struct {
	i        *interceptor
	ctx      context.Context
	p        *core.Permit
	once     sync.Once
	stopCtx  func() bool
	hold     *time.Timer
	stopHold func() bool
}

func (h *heldPermit) release() { h.once.Do(h.releaseNow) }

func (h *heldPermit) releaseNow() { h.i.release(h.ctx, h.p) }

// stop cancels the release at the ctx's end and after WithMaxHold.
func (h *heldPermit) stop() {
	if h.stopCtx != nil {
		h.stopCtx()
	}
	if h.hold != nil {
		h.hold.Stop()
	}
	if h.stopHold != nil {
		h.stopHold()
	}
}

// RowsClose releases the query's permit. ctx may carry no permit (rows of
// the legacy Query methods carry context.Background, or none at all).
func (i *interceptor) RowsClose(ctx context.Context, rows driver.Rows) error {
	if ctx != nil {
		if h, ok := ctx.Value(permitKey{i}).(*heldPermit); ok {
			h.stop()
			defer h.release()
		}
	}
	return rows.Close()
}
