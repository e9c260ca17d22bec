package sqlmw_test

import (
	"context"
	"database/sql"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/distsem/distsem/sqlmw"
)

func TestTxPerStatement(t *testing.T) {
	t.Parallel()
	db, sem, d := openFake(t, 1)
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := sem.inUse(t); got != 0 {
		t.Fatalf("in use after Begin = %d, want 0", got)
	}
	rows, err := tx.QueryContext(t.Context(), "ROWS 2")
	if err != nil {
		t.Fatal(err)
	}
	if got := sem.inUse(t); got != 1 {
		t.Fatalf("in use with open rows = %d, want 1", got)
	}
	rows.Close()
	if _, err := tx.ExecContext(t.Context(), "INSERT"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(t.Context(), "SKIP", 1); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	sem.balanced(t)
	if got := sem.acquired.Load(); got != 4 { // query, exec, ErrSkip + its fallback
		t.Fatalf("acquired %d, want 4", got)
	}
	if d.commits.Load() != 1 {
		t.Fatal("Commit did not reach the driver")
	}
}

// TestTxPerTransaction runs every kind of statement inside a transaction
// that holds the only permit: each would deadlock (fail after the max
// wait) if it took a permit of its own.
func TestTxPerTransaction(t *testing.T) {
	t.Parallel()
	db, sem, d := openFake(t, 1, sqlmw.WithTxMode(sqlmw.PerTransaction), sqlmw.WithMaxWait(5*time.Second))
	outside, err := db.PrepareContext(t.Context(), "ROWS 1")
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Close()

	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := sem.inUse(t); got != 1 {
		t.Fatalf("in use after Begin = %d, want 1", got)
	}
	rows, err := tx.QueryContext(t.Context(), "ROWS 3")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		if _, err := tx.ExecContext(t.Context(), "INSERT"); err != nil {
			t.Fatal(err)
		}
	}
	rows.Close()
	var n int64
	if err := tx.QueryRowContext(t.Context(), "ROWS 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(t.Context(), "SKIP", 1); err != nil { // prepared fallback
		t.Fatal(err)
	}
	ins, err := tx.PrepareContext(t.Context(), "INSERT")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ins.ExecContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := tx.StmtContext(t.Context(), outside).QueryRowContext(t.Context()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if got := sem.acquired.Load(); got != 1 {
		t.Fatalf("statements inside the transaction took permits: acquired %d, want 1", got)
	}

	// A statement outside the transaction waits for the permit.
	done := make(chan error)
	go func() {
		_, err := db.ExecContext(context.Background(), "INSERT")
		done <- err
	}()
	for st, _ := sem.Stats(t.Context()); st.Waiting == 0; st, _ = sem.Stats(t.Context()) {
		runtime.Gosched()
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The connection left the transaction: its statements take permits again.
	db.SetMaxOpenConns(1)
	if err := outside.QueryRowContext(t.Context()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if got := sem.acquired.Load(); got != 3 {
		t.Fatalf("acquired %d, want 3", got)
	}
	sem.balanced(t)
	if d.commits.Load() != 1 {
		t.Fatal("Commit did not reach the driver")
	}
}

func TestTxPerTransactionEnds(t *testing.T) {
	t.Parallel()
	t.Run("rollback", func(t *testing.T) {
		db, sem, d := openFake(t, 1, sqlmw.WithTxMode(sqlmw.PerTransaction))
		tx, err := db.BeginTx(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(t.Context(), "FAIL"); !errors.Is(err, errFake) {
			t.Fatalf("Exec = %v", err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		sem.balanced(t)
		if d.rollbacks.Load() != 1 {
			t.Fatal("Rollback did not reach the driver")
		}
	})
	t.Run("begin fails", func(t *testing.T) {
		db, sem, d := openFake(t, 1, sqlmw.WithTxMode(sqlmw.PerTransaction))
		d.failBegin.Store(true)
		if _, err := db.BeginTx(t.Context(), nil); !errors.Is(err, errFake) {
			t.Fatalf("Begin = %v, want errFake", err)
		}
		sem.balanced(t)
		if sem.acquired.Load() != 1 {
			t.Fatal("Begin took no permit")
		}
	})
	t.Run("ctx cancelled", func(t *testing.T) {
		db, sem, d := openFake(t, 1, sqlmw.WithTxMode(sqlmw.PerTransaction))
		ctx, cancel := context.WithCancel(t.Context())
		if _, err := db.BeginTx(ctx, nil); err != nil {
			t.Fatal(err)
		}
		cancel() // database/sql rolls back from its own goroutine
		sem.waitRelease(t)
		sem.balanced(t)
		if d.rollbacks.Load() != 1 {
			t.Fatal("the cancelled transaction was not rolled back")
		}
	})
	t.Run("commit with rows open", func(t *testing.T) {
		db, sem, _ := openFake(t, 1, sqlmw.WithTxMode(sqlmw.PerTransaction))
		tx, err := db.BeginTx(t.Context(), &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := tx.QueryContext(t.Context(), "ROWS -1")
		if err != nil {
			t.Fatal(err)
		}
		rows.Next()
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		sem.balanced(t)
	})
}
