package sqlmw_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/sqlmw"
)

// counted is a Local semaphore that counts grants and releases.
type counted struct {
	*core.Local
	acquired, released atomic.Int64
	releases           chan struct{} // one value per release
}

func newCounted(limit int64) *counted {
	c := &counted{releases: make(chan struct{}, 1024)}
	c.Local = core.NewLocal(limit, core.WithObserver(core.ObserverFunc(func(e core.Event) {
		switch e.Kind {
		case core.EventAcquired:
			c.acquired.Add(1)
		case core.EventReleased:
			c.released.Add(1)
			c.releases <- struct{}{}
		}
	})))
	return c
}

func (c *counted) inUse(t *testing.T) int64 {
	t.Helper()
	st, err := c.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.InUse
}

// balanced fails unless every permit granted was released.
func (c *counted) balanced(t *testing.T) {
	t.Helper()
	st, _ := c.Stats(context.Background())
	if st.InUse != 0 || st.Waiting != 0 || c.acquired.Load() != c.released.Load() {
		t.Fatalf("permits leaked: in use %d, waiting %d, acquired %d, released %d",
			st.InUse, st.Waiting, c.acquired.Load(), c.released.Load())
	}
}

// waitRelease waits for the next permit release.
func (c *counted) waitRelease(t *testing.T) {
	t.Helper()
	select {
	case <-c.releases:
	case <-time.After(10 * time.Second): // a guard against hanging, not a synchronisation
		t.Fatal("no permit was released")
	}
}

func openFake(t *testing.T, limit int64, opts ...sqlmw.Option) (*sql.DB, *counted, *fakeDriver) {
	t.Helper()
	d := newFakeDriver()
	sem := newCounted(limit)
	// A leaked permit must fail the test, not hang it.
	opts = append([]sqlmw.Option{sqlmw.WithMaxWait(10 * time.Second)}, opts...)
	db := sqlmw.OpenDB(d, sem, opts...)
	t.Cleanup(func() { _ = db.Close() })
	return db, sem, d
}

func TestQueryHoldsUntilRowsClose(t *testing.T) {
	t.Parallel()
	db, sem, _ := openFake(t, 4)
	rows, err := db.QueryContext(t.Context(), "ROWS 3")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		if got := sem.inUse(t); got != 1 {
			t.Fatalf("in use while iterating = %d, want 1", got)
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	sem.balanced(t)
	if sem.acquired.Load() != 1 {
		t.Fatalf("acquired %d permits, want 1", sem.acquired.Load())
	}
}

func TestQueryRowScan(t *testing.T) {
	t.Parallel()
	db, sem, _ := openFake(t, 1)
	for range 3 { // with a limit of 1, a leak would block the next call
		var n int64
		if err := db.QueryRowContext(t.Context(), "ROWS 5").Scan(&n); err != nil || n != 1 {
			t.Fatalf("Scan = %d, %v", n, err)
		}
		if err := db.QueryRowContext(t.Context(), "ROWS 0").Scan(&n); !errors.Is(err, sql.ErrNoRows) {
			t.Fatalf("Scan of no rows = %v", err)
		}
	}
	sem.balanced(t)
}

func TestCancelMidIteration(t *testing.T) {
	t.Parallel()
	db, sem, _ := openFake(t, 1)
	ctx, cancel := context.WithCancel(t.Context())
	rows, err := db.QueryContext(ctx, "ROWS -1") // endless: only the cancel ends it
	if err != nil {
		t.Fatal(err)
	}
	rows.Next()
	cancel()
	for rows.Next() { // stops once database/sql sees the cancel
	}
	if !errors.Is(rows.Err(), context.Canceled) {
		t.Fatalf("rows.Err() = %v, want context.Canceled", rows.Err())
	}
	// database/sql closes the Rows itself, from its own goroutine, without
	// a call to rows.Close.
	sem.waitRelease(t)
	sem.balanced(t)
}

func TestDriverErrorReleases(t *testing.T) {
	t.Parallel()
	db, sem, _ := openFake(t, 1)
	if _, err := db.QueryContext(t.Context(), "FAIL"); !errors.Is(err, errFake) {
		t.Fatalf("Query = %v, want errFake", err)
	}
	if _, err := db.ExecContext(t.Context(), "FAIL"); !errors.Is(err, errFake) {
		t.Fatalf("Exec = %v, want errFake", err)
	}
	if err := db.QueryRowContext(t.Context(), "FAIL").Scan(new(int)); !errors.Is(err, errFake) {
		t.Fatalf("QueryRow = %v, want errFake", err)
	}
	sem.balanced(t)
	if sem.acquired.Load() == 0 {
		t.Fatal("no permit was taken")
	}
}

func TestErrSkipReleasesAndFallbackTakesItsOwn(t *testing.T) {
	t.Parallel()
	db, sem, _ := openFake(t, 1)
	if _, err := db.ExecContext(t.Context(), "SKIP", 1); err != nil {
		t.Fatal(err)
	}
	// The connection call was refused with ErrSkip (permit 1, released), then
	// database/sql prepared and ran the statement (permit 2). With a limit
	// of 1, a permit kept across ErrSkip would deadlock the fallback.
	if got := sem.acquired.Load(); got != 2 {
		t.Fatalf("Exec took %d permits, want 2", got)
	}
	var n int64
	if err := db.QueryRowContext(t.Context(), "SKIP", 1).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if got := sem.acquired.Load(); got != 4 {
		t.Fatalf("after Query: %d permits, want 4", got)
	}
	sem.balanced(t)
}

func TestPreparedStatements(t *testing.T) {
	t.Parallel()
	db, sem, _ := openFake(t, 1)
	q, err := db.PrepareContext(t.Context(), "ROWS 2")
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	rows, err := q.QueryContext(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := sem.inUse(t); got != 1 {
		t.Fatalf("in use with open rows = %d, want 1", got)
	}
	rows.Close()
	e, err := db.PrepareContext(t.Context(), "INSERT")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.ExecContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	f, _ := db.PrepareContext(t.Context(), "FAIL")
	if _, err := f.ExecContext(t.Context()); !errors.Is(err, errFake) {
		t.Fatalf("failing stmt Exec = %v", err)
	}
	if _, err := f.QueryContext(t.Context()); !errors.Is(err, errFake) {
		t.Fatalf("failing stmt Query = %v", err)
	}
	f.Close()
	sem.balanced(t)
	if got := sem.acquired.Load(); got != 4 {
		t.Fatalf("acquired %d, want 4", got)
	}
}

func TestExecHoldsDuringCall(t *testing.T) {
	t.Parallel()
	db, sem, d := openFake(t, 2)
	done := make(chan error)
	go func() {
		_, err := db.ExecContext(context.Background(), "BLOCK")
		done <- err
	}()
	<-d.entered
	if got := sem.inUse(t); got != 1 {
		t.Fatalf("in use during Exec = %d, want 1", got)
	}
	close(d.proceed)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	sem.balanced(t)
}

func TestPanicInScanLoop(t *testing.T) {
	t.Parallel()
	db, sem, _ := openFake(t, 1)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("no panic")
			}
		}()
		rows, err := db.QueryContext(t.Context(), "ROWS 10")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			panic("boom")
		}
	}()
	sem.balanced(t)
}

// TestLegacyPathsCarryNoPermit drives the driver methods without a context
// that database/sql never calls: their Rows and Tx reach RowsClose, TxCommit
// with a context holding no permit (or none at all), which must be fine.
func TestLegacyPathsCarryNoPermit(t *testing.T) {
	t.Parallel()
	db, sem, _ := openFake(t, 1, sqlmw.WithTxMode(sqlmw.PerTransaction))
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		//lint:ignore SA1019 the legacy path is what this test drives
		rows, err := dc.(driver.Queryer).Query("ROWS 1", nil)
		if err != nil {
			return err
		}
		if err := rows.Close(); err != nil {
			return err
		}
		//lint:ignore SA1019 the legacy path is what this test drives
		tx, err := dc.(driver.Conn).Begin()
		if err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		t.Fatal(err)
	}
	sem.balanced(t)
}
