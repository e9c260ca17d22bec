package sqlmw

import (
	"context"
	"time"

	"github.com/distsem/distsem/core"
)

// Option configures a throttled driver (Register, Open, OpenDB, WrapDriver).
type Option func(*config)

type config struct {
	keyed          core.KeyedSemaphore
	classify       func(ctx context.Context, query string) string
	maxWait        time.Duration
	txMode         TxMode
	releaseTimeout time.Duration
}

func defaultConfig() config {
	return config{txMode: PerStatement, releaseTimeout: 5 * time.Second}
}

func buildConfig(opts []Option) config {
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	return c
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

// WithMaxWait bounds how long a query waits for its permit. When the wait
// runs out the query fails with an error matching core.ErrNoPermit, without
// reaching the database. The default is 0: wait as long as the query's
// context allows.
func WithMaxWait(d time.Duration) Option { return func(c *config) { c.maxWait = d } }

// WithTxMode sets how transactions are throttled. The default is
// PerStatement.
func WithTxMode(m TxMode) Option { return func(c *config) { c.txMode = m } }

// WithReleaseTimeout bounds the backend round trip that gives a permit
// back. Release uses a context detached from the query's (which is often
// cancelled by then) plus this timeout. A release that fails is not
// reported to the caller, whose query has already succeeded: the backend
// reclaims the permit when its lease ends, and core.WithOnError sees the
// error. The default is 5s.
func WithReleaseTimeout(d time.Duration) Option { return func(c *config) { c.releaseTimeout = d } }
