package sqlmw_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/sqlmw"
)

func TestMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, sem, d := openFake(t, 1, sqlmw.WithMaxWait(time.Second))
		rows, err := db.QueryContext(t.Context(), "ROWS 1") // holds the only permit
		if err != nil {
			t.Fatal(err)
		}
		calls := d.calls.Load()
		start := time.Now()
		_, err = db.ExecContext(t.Context(), "INSERT")
		if !errors.Is(err, core.ErrNoPermit) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Exec = %v, want ErrNoPermit", err)
		}
		var e *sqlmw.Error
		if !errors.As(err, &e) || strings.Contains(err.Error(), "core:") {
			t.Fatalf("error %q is not a *sqlmw.Error with a fixed message", err)
		}
		if waited := time.Since(start); waited != time.Second {
			t.Fatalf("waited %v, want 1s", waited)
		}
		if d.calls.Load() != calls {
			t.Fatal("a query without a permit reached the database")
		}
		rows.Close()
		sem.balanced(t)
	})
}

func TestCancelWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, sem, _ := openFake(t, 1)
		rows, err := db.QueryContext(t.Context(), "ROWS 1")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() {
			_, err := db.QueryContext(ctx, "ROWS 1")
			done <- err
		}()
		synctest.Wait()
		if st, _ := sem.Stats(t.Context()); st.Waiting != 1 {
			t.Fatalf("waiting = %d, want 1", st.Waiting)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) || errors.Is(err, core.ErrNoPermit) {
			t.Fatalf("Query = %v, want context.Canceled only", err)
		}
		rows.Close()
		sem.balanced(t)
	})
}

// downSem is a semaphore whose backend is down (FailClosed).
type downSem struct{}

func (downSem) Acquire(context.Context, ...core.AcquireOption) (*core.Permit, error) {
	return nil, fmt.Errorf("%w: acquire: dial tcp 10.9.8.7:6379: connection refused", core.ErrUnavailable)
}

func (s downSem) TryAcquire(ctx context.Context, o ...core.AcquireOption) (*core.Permit, error) {
	return s.Acquire(ctx, o...)
}

func TestBackendFailurePassesThrough(t *testing.T) {
	t.Parallel()
	d := newFakeDriver()
	db := sqlmw.OpenDB(d, downSem{})
	defer db.Close()
	_, err := db.ExecContext(t.Context(), "INSERT")
	if !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("Exec = %v, want core.ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), "10.9.8.7") {
		t.Fatalf("internal detail in the error text: %q", err)
	}
	if !strings.Contains(errors.Unwrap(err).Error(), "10.9.8.7") {
		t.Fatal("the cause is lost")
	}
	if d.calls.Load() != 0 {
		t.Fatal("the query ran without a permit")
	}
}

func TestKeyed(t *testing.T) {
	t.Parallel()
	keyed := core.NewLocalKeyed(1)
	db, sem, _ := openFake(t, 4, sqlmw.WithKeyed(keyed, sqlmw.CommentKey))
	rows, err := db.QueryContext(t.Context(), "/* distsem:reports */ ROWS 1")
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := keyed.Stats(t.Context(), "reports"); st.InUse != 1 {
		t.Fatalf("reports in use = %d, want 1", st.InUse)
	}
	if got := sem.inUse(t); got != 0 {
		t.Fatalf("default semaphore in use = %d, want 0", got)
	}
	if _, err := db.ExecContext(t.Context(), "INSERT"); err != nil { // untagged: the default
		t.Fatal(err)
	}
	rows.Close()
	if st, _ := keyed.Stats(t.Context(), "reports"); st.InUse != 0 {
		t.Fatalf("reports in use after close = %d", st.InUse)
	}
	sem.balanced(t)
	if sem.acquired.Load() != 1 {
		t.Fatal("the untagged query did not use the default semaphore")
	}
}

func TestNilSemaphore(t *testing.T) {
	t.Parallel()
	d := newFakeDriver()
	db := sqlmw.OpenDB(d, nil, sqlmw.WithKeyed(core.NewLocalKeyed(1), sqlmw.CommentKey))
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), "INSERT"); err != nil || d.calls.Load() != 1 {
		t.Fatalf("untagged query with no default semaphore: %v", err)
	}
	for _, sem := range []core.Semaphore{nil, (*core.Local)(nil)} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "sqlmw: ") {
					t.Errorf("WrapDriver(%#v) panic = %v", sem, r)
				}
			}()
			sqlmw.WrapDriver(d, sem)
		}()
	}
}

func TestCommentKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ query, want string }{
		{"/* distsem:reports */ SELECT 1", "reports"},
		{"/*distsem:a*/SELECT 1", "a"},
		{"SELECT /* other */ 1 /* distsem: b */", "b"},
		{"SELECT '/* distsem:x */'", ""},
		{"SELECT 1", ""},
		{"/* distsem:c", ""},
		{"-- distsem:d\nSELECT 1", ""},
	} {
		if got := sqlmw.CommentKey(context.Background(), tc.query); got != tc.want {
			t.Errorf("CommentKey(%q) = %q, want %q", tc.query, got, tc.want)
		}
	}
}

func TestRegisterAndOpen(t *testing.T) {
	t.Parallel()
	sem := newCounted(1)
	a, err := sqlmw.Register(fakeName, sem)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sqlmw.Register(fakeName, sem)
	if err != nil || a == b {
		t.Fatalf("Register twice: %q, %q, %v", a, b, err)
	}
	db, err := sql.Open(a, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), "INSERT"); err != nil {
		t.Fatal(err)
	}
	db2, err := sqlmw.Open(fakeName, "", sem)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if err := db2.QueryRowContext(t.Context(), "ROWS 1").Scan(new(int)); err != nil {
		t.Fatal(err)
	}
	if sem.acquired.Load() != 2 {
		t.Fatalf("acquired %d, want 2", sem.acquired.Load())
	}
	sem.balanced(t)
	if _, err := sqlmw.Register("no-such-driver", sem); err == nil {
		t.Fatal("Register of an unknown driver succeeded")
	}
	if _, err := sqlmw.Open("no-such-driver", "", sem); err == nil {
		t.Fatal("Open of an unknown driver succeeded")
	}
}
