package sqlmw

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/admit"
)

// Option configures a throttled driver (Register, Open, OpenDB, WrapDriver).
type Option func(*config)

type config struct {
	keyed          core.KeyedSemaphore
	classify       func(ctx context.Context, query string) string
	maxWait        time.Duration
	maxWaiting     int
	txMode         TxMode
	releaseTimeout time.Duration
	maxHold        time.Duration
	// afterFunc, when not nil, runs f after d and returns a func that
	// stops it: tests replace time.AfterFunc, the default, with a clock of
	// their own.
	afterFunc func(d time.Duration, f func()) (stop func() bool)
}

func defaultConfig() config {
	return config{txMode: PerStatement, maxWait: admit.WaitForever, maxWaiting: math.MaxInt}
}

// buildConfig applies opts and the defaults of zero values. It panics if
// a value is out of range.
func buildConfig(opts []Option) config {
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	if c.maxWaiting == 0 {
		c.maxWaiting = math.MaxInt
	}
	if c.releaseTimeout == 0 {
		c.releaseTimeout = admit.DefaultReleaseTimeout
	}
	switch {
	case c.maxHold == 0:
		c.maxHold = DefaultMaxHold
	case c.maxHold < 0 && c.maxHold != HoldForever:
		panic(fmt.Sprintf("sqlmw: WithMaxHold(%v): want d > 0, 0 (the default) or HoldForever", c.maxHold))
	}
	return c
}

// admitOptions are the options of the admit.Controller that takes the
// permits: the same vocabulary as httpmw, grpcmw and echomw.
func (c *config) admitOptions() []admit.Option {
	return []admit.Option{admit.WithMaxWait(c.maxWait), admit.WithMaxWaiting(c.maxWaiting),
		admit.WithReleaseTimeout(c.releaseTimeout)}
}

// TxMode says how transactions are throttled.
type TxMode int

const (
	// PerStatement throttles every statement inside a transaction like any
	// other statement: one permit per query, none for Begin, Commit or
	// Rollback. Permits are held only while the database works, but a
	// transaction that waits for a permit keeps its locks meanwhile; see
	// the package documentation for the deadlock this allows.
	PerStatement TxMode = iota
	// PerTransaction takes one permit in Begin and holds it until Commit or
	// Rollback. Statements inside the transaction take no permit of their
	// own, so a transaction never waits for a second permit while it holds
	// one.
	PerTransaction
)

func (m TxMode) String() string {
	if m == PerTransaction {
		return "per-transaction"
	}
	return "per-statement"
}

// WithKeyed sends queries to per-key semaphores: classify returns the key
// of each query, and a query with a non-empty key takes its permit from k
// instead of the semaphore given to the constructor. A query whose key is
// "" uses that semaphore, or runs without a permit if it is nil. In
// PerTransaction mode the transaction's key is classify(ctx, ""). classify
// runs for every query and must be fast and safe for concurrent use;
// CommentKey is a ready classifier. The default is no keyed semaphore.
// WithKeyed panics if k or classify is nil.
func WithKeyed(k core.KeyedSemaphore, classify func(ctx context.Context, query string) string) Option {
	if k == nil || classify == nil {
		panic("sqlmw: WithKeyed expects a keyed semaphore and a classifier")
	}
	return func(c *config) { c.keyed, c.classify = k, classify }
}

// WithMaxWait bounds how long a query waits for its permit, in the
// vocabulary of every distsem adapter (see package admit): d > 0 waits up
// to d, 0 never waits, admit.WaitForever waits as long as the query's
// context allows. A query that gets no permit in time fails with an error
// matching core.ErrNoPermit, without reaching the database. The default
// is admit.WaitForever.
func WithMaxWait(d time.Duration) Option { return func(c *config) { c.maxWait = d } }

// WithMaxWaiting bounds how many queries of one key (or of the unkeyed
// semaphore) may wait for a permit at once in this process; past it a
// query fails at once with an error matching core.ErrNoPermit.
// admit.NoWaiting lets none wait. The default (0) is no bound: a waiting
// query holds a pool connection, so database/sql's SetMaxOpenConns
// already bounds them.
func WithMaxWaiting(n int) Option { return func(c *config) { c.maxWaiting = n } }

// WithTxMode sets how transactions are throttled. The default is
// PerStatement.
func WithTxMode(m TxMode) Option { return func(c *config) { c.txMode = m } }

// WithReleaseTimeout bounds the backend round trip that gives a permit
// back. Release uses a context detached from the query's (which is often
// cancelled by then) plus this timeout. A release that fails is not
// reported to the caller, whose query has already succeeded: the backend
// reclaims the permit when its lease ends, and core.WithOnError sees the
// error. 0 means admit.DefaultReleaseTimeout (2s), the default, as in
// every distsem adapter.
func WithReleaseTimeout(d time.Duration) Option { return func(c *config) { c.releaseTimeout = d } }

const (
	// DefaultMaxHold is the MaxHold used when WithMaxHold is 0 or not
	// given.
	DefaultMaxHold = time.Hour
	// HoldForever, as a MaxHold, lets a query's Rows keep their permit
	// until they are closed or the query's context ends, however long that
	// takes.
	HoldForever time.Duration = -1
)

// WithMaxHold bounds how long a query's Rows keep its permit: d after the
// query returned its Rows, the permit is released even if the Rows are
// still open. The query itself is not cancelled and goes on running (and
// streaming rows) without a permit, so a query that outlives d is no
// longer counted against the limit. The bound is there for Rows that can
// never be closed (a panic in a Scanner, see the package documentation)
// in a query whose context never ends: without it their permit would be
// lost for the life of the process. 0 means DefaultMaxHold (1h), the
// default: a lost permit shrinks the limit of the whole fleet for good,
// while a query that streams for over an hour is rare and, past the
// bound, only runs unthrottled. HoldForever sets no bound. Exec and
// PerTransaction permits are not affected. Other negative values make the
// constructor panic.
func WithMaxHold(d time.Duration) Option { return func(c *config) { c.maxHold = d } }
