package sqlmw_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/distsem/distsem/sqlmw"
)

// fakeTimers records the WithMaxHold timers a DB starts; fire runs them.
type fakeTimers struct {
	mu    sync.Mutex
	d     []time.Duration
	fires []func()
}

func (f *fakeTimers) afterFunc(d time.Duration, fire func()) func() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.d = append(f.d, d)
	f.fires = append(f.fires, fire)
	return func() bool { return true }
}

func (f *fakeTimers) started() ([]time.Duration, []func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.d...), append([]func(){}, f.fires...)
}

// TestMaxHoldReleasesWhileRowsOpen: Rows of a query whose ctx never ends
// (db.Query, context.Background) that are never closed, as after a panic
// in a Scanner, give their permit back after WithMaxHold; the query goes
// on, and closing its Rows later releases nothing twice.
func TestMaxHoldReleasesWhileRowsOpen(t *testing.T) {
	t.Parallel()
	var clock fakeTimers
	db, sem, _ := openFake(t, 1, sqlmw.WithMaxHold(time.Minute), sqlmw.WithAfterFunc(clock.afterFunc))
	rows, err := db.Query("ROWS 3")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	ds, fires := clock.started()
	if len(ds) != 1 || ds[0] != time.Minute {
		t.Fatalf("max-hold timers started = %v, want one of 1m", ds)
	}
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	if n := sem.inUse(t); n != 1 {
		t.Fatalf("in use = %d before the max hold, want 1", n)
	}
	fires[0]()
	sem.waitRelease(t)
	if n := sem.inUse(t); n != 0 {
		t.Fatalf("in use = %d after the max hold with the Rows open, want 0", n)
	}
	if !rows.Next() {
		t.Fatalf("the query stopped after its permit was released: %v", rows.Err())
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	sem.balanced(t)
	select {
	case <-sem.releases:
		t.Fatal("closing the Rows released the permit a second time")
	default:
	}
}

// TestMaxHoldOption: 0 means DefaultMaxHold, HoldForever starts no timer,
// and other negative values panic at construction.
func TestMaxHoldOption(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want []time.Duration
	}{{0, []time.Duration{sqlmw.DefaultMaxHold}}, {sqlmw.HoldForever, nil}} {
		t.Run(fmt.Sprint(tc.d), func(t *testing.T) {
			var clock fakeTimers
			db, sem, _ := openFake(t, 1, sqlmw.WithMaxHold(tc.d), sqlmw.WithAfterFunc(clock.afterFunc))
			rows, err := db.Query("ROWS 1")
			if err != nil {
				t.Fatal(err)
			}
			ds, _ := clock.started()
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			sem.balanced(t)
			if fmt.Sprint(ds) != fmt.Sprint(tc.want) {
				t.Fatalf("max-hold timers started = %v, want %v", ds, tc.want)
			}
		})
	}
	defer func() {
		if recover() == nil {
			t.Fatal("WithMaxHold(-2) did not panic")
		}
	}()
	sqlmw.OpenDB(newFakeDriver(), newCounted(1), sqlmw.WithMaxHold(-2))
}
