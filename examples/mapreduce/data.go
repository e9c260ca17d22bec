package main

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"regexp"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	"modernc.org/sqlite"               // registers "sqlite"
)

// On SQLite, -slow is done by distsem_sleep(ns), a SQL function that
// sleeps inside the statement: SQLite runs in the worker process, so the
// query is still executing in the database engine (holding its read
// transaction) for that long, as pg_sleep keeps a PostgreSQL backend busy.
func init() {
	sqlite.MustRegisterScalarFunction("distsem_sleep", 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		if ns, ok := args[0].(int64); ok && ns > 0 {
			time.Sleep(time.Duration(ns))
		}
		return int64(0), nil
	})
}

var tableName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// setupTable creates the table of n rows (id 1..n, amount = id % 1000) and
// returns the row count and the sum of amount, to check the job's result.
func setupTable(ctx context.Context, driverName, dsn, table string, n int64) (count, sum int64, err error) {
	if !tableName.MatchString(table) {
		return 0, 0, fmt.Errorf("bad table name %q", table)
	}
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	var stmts []string
	switch driverName {
	case "sqlite":
		stmts = []string{
			`DROP TABLE IF EXISTS ` + table,
			`CREATE TABLE ` + table + ` (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL, note TEXT NOT NULL)`,
			`INSERT INTO ` + table + ` (id, amount, note)
			 WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?)
			 SELECT x, x % 1000, 'row ' || x FROM c`,
		}
	case "pgx":
		stmts = []string{
			`DROP TABLE IF EXISTS ` + table,
			`CREATE TABLE ` + table + ` (id bigint PRIMARY KEY, amount bigint NOT NULL, note text NOT NULL)`,
			`INSERT INTO ` + table + ` SELECT g, g % 1000, 'row ' || g FROM generate_series(1, $1::bigint) g`,
			`ANALYZE ` + table,
		}
	default:
		return 0, 0, fmt.Errorf("unsupported driver %q (sqlite or pgx)", driverName)
	}
	for i, s := range stmts {
		var args []any
		if i == 2 {
			args = []any{n}
		}
		if _, err := db.ExecContext(ctx, s, args...); err != nil {
			return 0, 0, fmt.Errorf("setup: %w", err)
		}
	}
	err = db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(amount), 0) FROM `+table).Scan(&count, &sum)
	return count, sum, err
}

func dropTable(driverName, dsn, table string) error {
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(`DROP TABLE IF EXISTS ` + table)
	return err
}

// pageQuery returns the query of one page, ids in (lo, hi], that takes at
// least slow on the database, and its arguments. The materialised CTE runs
// the sleep once per query, not once per row.
func pageQuery(driverName, table string, lo, hi int64, slow time.Duration) (string, []any) {
	if driverName == "pgx" {
		return `WITH s AS MATERIALIZED (SELECT pg_sleep($3::float8))
			SELECT i.id, i.amount FROM ` + table + ` i, s WHERE i.id > $1 AND i.id <= $2`,
			[]any{lo, hi, slow.Seconds()}
	}
	return `WITH s AS MATERIALIZED (SELECT distsem_sleep(?))
		SELECT i.id, i.amount FROM ` + table + ` i, s WHERE i.id > ? AND i.id <= ?`,
		[]any{slow.Nanoseconds(), lo, hi}
}
