package redissem

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// A slot migration (redis-cli --cluster reshard) is routine: while a slot
// moves, Redis answers scripts and subscriptions with MOVED, ASK and
// TRYAGAIN. Calls retry them within their ctx (callRetry, addShards); the
// background work retries at its next round, and a migrationWatch keeps
// those replies out of WithOnError and the observer unless one migration
// outlasts migrateBudget, which is then reported once.

// isMigration reports whether err is a reply that a slot migration gives:
// MOVED, ASK, TRYAGAIN, or errMigrating.
func isMigration(err error) bool {
	if errors.Is(err, errMigrating) {
		return true
	}
	k := clusterReplyOf(err)
	return k == replyMigrating || k == replyMoved
}

// migrationWatch times the migration replies of one backend: from the first
// one after a script that succeeded.
type migrationWatch struct {
	since atomic.Int64 // UnixNano of the first migration reply; 0: none since the last success
	told  atomic.Bool  // the current migration has been reported
}

// errSlowMigration is what report sends for a migration that outlasted
// migrateBudget.
var errSlowMigration = fmt.Errorf("a Cluster slot migration has lasted over %v", migrateBudget)

// seen records a migration reply at now.
func (m *migrationWatch) seen(now time.Time) {
	if m.since.Load() == 0 {
		m.since.CompareAndSwap(0, now.UnixNano())
	}
}

// outlasted returns nil for a migration reply err that is to stay quiet, or
// the error to report, once per migration, when the replies have gone on
// for migrateBudget.
func (m *migrationWatch) outlasted(err error, now time.Time) error {
	m.seen(now)
	if now.Sub(time.Unix(0, m.since.Load())) < migrateBudget || m.told.Swap(true) {
		return nil
	}
	return fmt.Errorf("%w: %w", errSlowMigration, err)
}

// settled ends the current migration: a script succeeded.
func (m *migrationWatch) settled() {
	if m.since.Load() != 0 {
		m.since.Store(0)
		m.told.Store(false)
	}
}
