package sqlmw_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/sqlmw"
)

// The bounds of the allocations the wrapper adds to one query whose Rows
// are read and closed, with core.Local, over the same query unwrapped:
// ngrok/sqlmw's wrapping, the permit and what releases it once (RowsClose,
// the ctx's end, WithMaxHold's timer). Measured: 8 (now and then 9) with a
// ctx that can end, 7 with one that cannot; 13 and 10 before the release
// state went into one allocation. Raise them only knowingly.
const (
	maxQueryAllocs           = 10
	maxQueryAllocsBackground = 8
)

// TestQueryAllocs keeps the wrapper's allocations per query from growing
// unnoticed (WithMaxHold added 5 of them). It counts allocations, never
// time.
func TestQueryAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	raw := sql.OpenDB(newFakeDriver())
	defer raw.Close()
	wrapped := sqlmw.OpenDB(newFakeDriver(), core.NewLocal(1<<18))
	defer wrapped.Close()
	for _, db := range []*sql.DB{raw, wrapped} {
		db.SetMaxOpenConns(1)
	}
	cancelable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		max  float64
	}{{"ctx that can end", cancelable, maxQueryAllocs}, {"background ctx", context.Background(), maxQueryAllocsBackground}} {
		var fail error
		query := func(db *sql.DB) func() {
			return func() {
				rows, err := db.QueryContext(tc.ctx, "ROWS 1")
				if err != nil {
					fail = err
					return
				}
				for rows.Next() {
				}
				fail = rows.Close()
			}
		}
		query(raw)()
		query(wrapped)()
		base, n := fewestAllocs(query(raw)), fewestAllocs(query(wrapped))
		if fail != nil {
			t.Fatal(fail)
		}
		t.Logf("%s: %.0f allocations per query, %.0f unwrapped", tc.name, n, base)
		if n-base > tc.max {
			t.Errorf("%s: the wrapper adds %.0f allocations per query, want <= %.0f", tc.name, n-base, tc.max)
		}
	}
}

// fewestAllocs returns the fewest allocations per call of f over a few
// measurements: a garbage collection meanwhile empties database/sql's
// pools, and a new goroutine (Rows with a ctx that can end start one) may
// or may not find one to reuse, which adds to some measurements only.
func fewestAllocs(f func()) float64 {
	n := testing.AllocsPerRun(100, f)
	for range 4 {
		n = min(n, testing.AllocsPerRun(100, f))
	}
	return n
}
