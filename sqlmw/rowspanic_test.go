package sqlmw_test

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/distsem/distsem/sqlmw"
)

type panicScanner struct{}

func (panicScanner) Scan(any) error { panic("scanner boom") }

// TestPanicInScannerReleasesWhenCtxEnds: a panic in a Scanner leaves
// database/sql's read lock on the Rows held (an upstream bug), so
// rows.Close would block forever and RowsClose never runs. The permit must
// still come back when the query's ctx ends.
func TestPanicInScannerReleasesWhenCtxEnds(t *testing.T) {
	t.Parallel()
	sem := newCounted(1)
	db := sqlmw.OpenDB(newFakeDriver(), sem, sqlmw.WithMaxWait(10*time.Second))
	t.Cleanup(func() { _ = db.Close() })
	ctx, cancel := context.WithCancel(t.Context())
	rows, err := db.QueryContext(ctx, "ROWS 3")
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: cancel, then free the lock the panic left,
	// so that database/sql's own goroutine can close the Rows and end.
	t.Cleanup(func() { unlockAfterScanPanic(t, rows) })
	t.Cleanup(cancel)
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Scan did not panic")
			}
		}()
		_ = rows.Scan(panicScanner{})
	}()
	if n := sem.inUse(t); n != 1 {
		t.Fatalf("in use = %d while the Rows are open, want 1", n)
	}
	cancel()
	sem.waitRelease(t)
	if n := sem.inUse(t); n != 0 {
		t.Fatalf("in use = %d after the query's ctx ended, want 0", n)
	}
}

// unlockAfterScanPanic drops the read lock that a panic in Scan left on
// rows (database/sql's closemu), as the fixed upstream code would.
func unlockAfterScanPanic(t *testing.T, rows any) {
	f := reflect.ValueOf(rows).Elem().FieldByName("closemu")
	if !f.IsValid() || f.Type() != reflect.TypeFor[sync.RWMutex]() {
		t.Errorf("database/sql.Rows has no closemu RWMutex: the test must be updated")
		return
	}
	(*sync.RWMutex)(unsafe.Pointer(f.UnsafeAddr())).RUnlock()
}
