package sqlmw_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"time"

	"modernc.org/sqlite"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/sqlmw"
)

// Open a database whose queries take one permit each. With redissem.New
// instead of core.NewLocal, the limit holds across every process that uses
// the same Redis semaphore.
func ExampleOpen() {
	ctx := context.Background()
	sem := core.NewLocal(2) // at most 2 queries at once
	db, err := sqlmw.Open("sqlite", "file::memory:", sem, sqlmw.WithMaxWait(10*time.Second))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one in-memory database

	if _, err := db.ExecContext(ctx, `CREATE TABLE t (v INTEGER)`); err != nil {
		panic(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO t VALUES (1), (2), (3)`); err != nil {
		panic(err)
	}
	rows, err := db.QueryContext(ctx, `SELECT v FROM t ORDER BY v`)
	if err != nil {
		panic(err)
	}
	st, _ := sem.Stats(ctx)
	fmt.Println("permits in use while rows are open:", st.InUse)
	var sum int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			panic(err)
		}
		sum += v
	}
	rows.Close()
	st, _ = sem.Stats(ctx)
	fmt.Println("sum:", sum, "permits in use after Close:", st.InUse)
	// Output:
	// permits in use while rows are open: 1
	// sum: 6 permits in use after Close: 0
}

// Register returns a new driver name for each call, so it is safe to call
// more than once (sql.Register panics on a duplicate name).
func ExampleRegister() {
	sem := core.NewLocal(4)
	name, err := sqlmw.Register("sqlite", sem)
	if err != nil {
		panic(err)
	}
	db, err := sql.Open(name, "file::memory:")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT 40 + 2`).Scan(&n); err != nil {
		panic(err)
	}
	fmt.Println(n)
	// Output: 42
}

// OpenDB throttles a connector, e.g. one built by the driver from a
// configuration struct.
func ExampleOpenDB() {
	var connector driver.Connector = sqliteConnector{dsn: "file::memory:"}
	db := sqlmw.OpenDB(connector, core.NewLocal(4))
	defer db.Close()
	var s string
	if err := db.QueryRow(`SELECT 'hello'`).Scan(&s); err != nil {
		panic(err)
	}
	fmt.Println(s)
	// Output: hello
}

type sqliteConnector struct{ dsn string }

func (c sqliteConnector) Connect(context.Context) (driver.Conn, error) {
	return (&sqlite.Driver{}).Open(c.dsn)
}
func (c sqliteConnector) Driver() driver.Driver { return &sqlite.Driver{} }

var registerOnce sync.Once

// WrapDriver returns a driver to register under a name of your choice.
// sql.Register panics on a second call with the same name: register once
// per process, or use Register.
func ExampleWrapDriver() {
	registerOnce.Do(func() {
		sql.Register("sqlite-throttled-example", sqlmw.WrapDriver(&sqlite.Driver{}, core.NewLocal(4)))
	})
	db, err := sql.Open("sqlite-throttled-example", "file::memory:")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	fmt.Println(db.Ping())
	// Output: <nil>
}

// In PerTransaction mode a transaction holds one permit from Begin to
// Commit, and its statements take none: with a limit of 1 this does not
// deadlock.
func ExampleWithTxMode() {
	ctx := context.Background()
	sem := core.NewLocal(1)
	db, err := sqlmw.Open("sqlite", "file::memory:", sem, sqlmw.WithTxMode(sqlmw.PerTransaction))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		panic(err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT 1 UNION ALL SELECT 2`)
	if err != nil {
		panic(err)
	}
	for rows.Next() { // a second statement while rows are open
		var v int
		if err := tx.QueryRowContext(ctx, `SELECT 10`).Scan(&v); err != nil {
			panic(err)
		}
	}
	rows.Close()
	st, _ := sem.Stats(ctx)
	fmt.Println("in use during the transaction:", st.InUse)
	if err := tx.Commit(); err != nil {
		panic(err)
	}
	st, _ = sem.Stats(ctx)
	fmt.Println("in use after Commit:", st.InUse)
	// Output:
	// in use during the transaction: 1
	// in use after Commit: 0
}

// WithKeyed gives tagged queries their own limit; WithMaxWait turns a long
// wait into an error matching core.ErrNoPermit.
func ExampleWithKeyed() {
	ctx := context.Background()
	reports := core.NewLocalKeyed(1) // 1 report query at a time
	db, err := sqlmw.Open("sqlite", "file::memory:", core.NewLocal(8),
		sqlmw.WithKeyed(reports, sqlmw.CommentKey), sqlmw.WithMaxWait(50*time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `/* distsem:reports */ SELECT 1`)
	if err != nil {
		panic(err)
	}
	defer rows.Close()
	_, err = db.QueryContext(ctx, `/* distsem:reports */ SELECT 2`)
	fmt.Println(err)
	fmt.Println(errors.Is(err, core.ErrNoPermit))
	var v int
	fmt.Println(db.QueryRowContext(ctx, `SELECT 3`).Scan(&v), v) // untagged: not limited by reports
	// Output:
	// sqlmw: no permit to run the query: the wait ran out
	// true
	// <nil> 3
}

func ExampleCommentKey() {
	fmt.Printf("%q\n", sqlmw.CommentKey(context.Background(), "/* distsem:reports */ SELECT count(*) FROM orders"))
	fmt.Printf("%q\n", sqlmw.CommentKey(context.Background(), "SELECT 1"))
	// Output:
	// "reports"
	// ""
}
