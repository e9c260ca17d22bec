package main

import (
	"context"
	"database/sql/driver"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	ngsqlmw "github.com/ngrok/sqlmw"
)

// startKey holds where the probe writes when a query reached the database.
type startKey struct{}

// withStart returns ctx for one query and a func that returns when the
// query reached the database (after its permit), or now if it never did.
func withStart(ctx context.Context) (context.Context, func() time.Time) {
	at := new(atomic.Int64)
	return context.WithValue(ctx, startKey{}, at), func() time.Time {
		if ns := at.Load(); ns != 0 {
			return time.Unix(0, ns)
		}
		return time.Now()
	}
}

// probe sits under the throttled driver: it sees a query only once its
// permit was granted.
type probe struct{ ngsqlmw.NullInterceptor }

func (probe) ConnQueryContext(ctx context.Context, conn driver.QueryerContext, q string, args []driver.NamedValue) (context.Context, driver.Rows, error) {
	if at, ok := ctx.Value(startKey{}).(*atomic.Int64); ok {
		at.Store(time.Now().UnixNano())
	}
	rows, err := conn.QueryContext(ctx, q, args)
	return ctx, rows, err
}

// pgxConnector returns pgx's connector wrapped by the probe.
func pgxConnector(dsn string) (driver.Connector, error) {
	d := ngsqlmw.Driver(stdlib.GetDefaultDriver(), probe{})
	return d.(driver.DriverContext).OpenConnector(dsn)
}
