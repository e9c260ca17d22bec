package sqlmw_test

import (
	"database/sql"
	"database/sql/driver"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"modernc.org/sqlite"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/internal/testwait"
	"github.com/distsem/distsem/sqlmw"
)

// gate is the SQL function distsem_test_gate(): it counts the calls running
// at once and blocks until the current gate channel is closed.
var gate struct {
	mu       sync.Mutex
	open     chan struct{}
	entered  chan struct{}
	running  atomic.Int64
	maxSeen  atomic.Int64
	register sync.Once
}

func gateFunc(*sqlite.FunctionContext, []driver.Value) (driver.Value, error) {
	n := gate.running.Add(1)
	for m := gate.maxSeen.Load(); n > m && !gate.maxSeen.CompareAndSwap(m, n); m = gate.maxSeen.Load() {
	}
	gate.mu.Lock()
	open, entered := gate.open, gate.entered
	gate.mu.Unlock()
	entered <- struct{}{}
	<-open
	gate.running.Add(-1)
	return int64(1), nil
}

func openSQLite(t *testing.T, limit int64, opts ...sqlmw.Option) (*counted, func() *sql.DB) {
	t.Helper()
	sem := newCounted(limit)
	dsn := "file:" + filepath.Join(t.TempDir(), "t.db") + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"
	// A leaked permit must fail the test, not hang it.
	opts = append([]sqlmw.Option{sqlmw.WithMaxWait(10 * time.Second)}, opts...)
	return sem, func() *sql.DB {
		db, err := sqlmw.Open("sqlite", dsn, sem, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
}

func TestSQLite(t *testing.T) {
	t.Parallel()
	sem, open := openSQLite(t, 2, sqlmw.WithTxMode(sqlmw.PerTransaction))
	db := open()
	ctx := t.Context()
	if _, err := db.ExecContext(ctx, `CREATE TABLE items (id INTEGER PRIMARY KEY, v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO items (id, v) VALUES (?, ?)`)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 100; i++ {
		if _, err := ins.ExecContext(ctx, i, i*2); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var sum int64
	if err := db.QueryRowContext(ctx, `SELECT sum(v) FROM items WHERE id <= ?`, 10).Scan(&sum); err != nil || sum != 110 {
		t.Fatalf("sum = %d, %v", sum, err)
	}
	rows, err := db.QueryContext(ctx, `SELECT id, v FROM items ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var id, v int64
		if err := rows.Scan(&id, &v); err != nil || v != 2*id {
			t.Fatalf("row %d: %d, %v", id, v, err)
		}
		n++
	}
	if err := rows.Close(); err != nil || n != 100 {
		t.Fatalf("read %d rows, %v", n, err)
	}
	sem.balanced(t)
	// create, begin, query-row, query (statements in the transaction take none)
	if got := sem.acquired.Load(); got != 4 {
		t.Fatalf("acquired %d, want 4", got)
	}
}

// TestSQLiteLimit checks from inside the database that no more than the
// limit of queries run at once.
func TestSQLiteLimit(t *testing.T) {
	gate.register.Do(func() { sqlite.MustRegisterScalarFunction("distsem_test_gate", 0, gateFunc) })
	const limit, callers = 2, 6
	gate.mu.Lock()
	gate.open, gate.entered = make(chan struct{}), make(chan struct{}, callers)
	gate.mu.Unlock()
	gate.maxSeen.Store(0)

	sem, open := openSQLite(t, limit)
	db := open()
	// One query first, so the new file is in WAL mode before the callers
	// open their connections: a connection that has to switch the journal
	// mode needs a lock that the gated queries hold, and would wait out
	// busy_timeout before ever reaching the semaphore.
	if _, err := db.ExecContext(t.Context(), `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			var one int64
			errs <- db.QueryRowContext(t.Context(), `SELECT distsem_test_gate()`).Scan(&one)
		})
	}
	for range limit {
		<-gate.entered
	}
	var st core.Stats
	queued := false
	defer func() {
		if !queued {
			t.Logf("waiting = %d, want %d (running %d)", st.Waiting, callers-limit, gate.running.Load())
		}
	}()
	testwait.Until(t, 10*time.Second, "the callers beyond the limit were not all queued", func() bool {
		st, _ = sem.Stats(t.Context())
		return st.Waiting == callers-limit
	})
	queued = true
	if got := gate.running.Load(); got != limit {
		t.Fatalf("running in SQLite = %d, want %d", got, limit)
	}
	gate.mu.Lock()
	close(gate.open)
	gate.mu.Unlock()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := gate.maxSeen.Load(); got != limit {
		t.Fatalf("at most %d queries ran at once, want %d", got, limit)
	}
	sem.balanced(t)
}
