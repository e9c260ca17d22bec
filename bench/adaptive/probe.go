package main

import (
	"context"
	"database/sql/driver"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	ngsqlmw "github.com/ngrok/sqlmw"
)

// spanKey holds where the probe writes when a query reached the database
// and when its rows were closed: both under the limit, inside the permit.
type spanKey struct{}

type span struct{ start, end atomic.Int64 }

// withSpan returns ctx for one query and a func that returns when the
// query reached the database and when its rows were closed (now for what
// the probe did not see).
func withSpan(ctx context.Context) (context.Context, func() (start, end time.Time)) {
	sp := new(span)
	return context.WithValue(ctx, spanKey{}, sp), func() (time.Time, time.Time) {
		now := time.Now()
		start, end := now, now
		if ns := sp.start.Load(); ns != 0 {
			start = time.Unix(0, ns)
		}
		if ns := sp.end.Load(); ns != 0 {
			end = time.Unix(0, ns)
		}
		return start, end
	}
}

// probe sits under the throttled driver: it sees a query only once its
// permit was granted.
type probe struct{ ngsqlmw.NullInterceptor }

func (probe) ConnQueryContext(ctx context.Context, conn driver.QueryerContext, q string, args []driver.NamedValue) (context.Context, driver.Rows, error) {
	sp, _ := ctx.Value(spanKey{}).(*span)
	if sp != nil {
		sp.start.Store(time.Now().UnixNano())
	}
	rows, err := conn.QueryContext(ctx, q, args)
	if err != nil && sp != nil {
		sp.end.Store(time.Now().UnixNano())
	}
	return ctx, rows, err
}

// RowsClose marks the query's end, before the throttled driver above
// releases its permit.
func (probe) RowsClose(ctx context.Context, rows driver.Rows) error {
	err := rows.Close()
	if sp, ok := ctx.Value(spanKey{}).(*span); ok {
		sp.end.Store(time.Now().UnixNano())
	}
	return err
}

// pgxConnector returns pgx's connector wrapped by the probe.
func pgxConnector(dsn string) (driver.Connector, error) {
	d := ngsqlmw.Driver(stdlib.GetDefaultDriver(), probe{})
	return d.(driver.DriverContext).OpenConnector(dsn)
}
