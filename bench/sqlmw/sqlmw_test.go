package sqlmw

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"slices"
	"testing"
	"time"

	ngsqlmw "github.com/ngrok/sqlmw"
	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite"

	"github.com/distsem/distsem/core"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/internal/servertest"
	"github.com/distsem/distsem/sqlmw"
)

// BenchmarkQuery runs SELECT ? + Scan on one in-memory SQLite connection,
// unwrapped and through the wrapper. The wrapper's overhead is the
// difference in ns/op.
func BenchmarkQuery(b *testing.B) {
	const dsn = "file::memory:"
	b.Run("raw", func(b *testing.B) {
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			b.Fatal(err)
		}
		benchQueries(b, db)
	})
	b.Run("local", func(b *testing.B) {
		db, err := sqlmw.Open("sqlite", dsn, core.NewLocal(1<<20))
		if err != nil {
			b.Fatal(err)
		}
		benchQueries(b, db)
	})
	b.Run("local-per-transaction", func(b *testing.B) {
		db, err := sqlmw.Open("sqlite", dsn, core.NewLocal(1<<20), sqlmw.WithTxMode(sqlmw.PerTransaction))
		if err != nil {
			b.Fatal(err)
		}
		benchQueries(b, db)
	})
	b.Run("redis", func(b *testing.B) {
		client := redis.NewClient(&redis.Options{Addr: servertest.RedisAddr(b)})
		defer client.Close()
		sem := redissem.New(client, "bench-sqlmw-query", 1<<20)
		defer sem.Close()
		db, err := sqlmw.Open("sqlite", dsn, sem)
		if err != nil {
			b.Fatal(err)
		}
		benchQueries(b, db)
	})
}

func benchQueries(b *testing.B, db *sql.DB) {
	b.Helper()
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	var n int64
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := db.QueryRowContext(ctx, "SELECT ?", i).Scan(&n); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQueryNgrok measures ngrok/sqlmw alone, with an interceptor that
// does nothing: the part of the overhead that is the wrapping itself.
func BenchmarkQueryNgrok(b *testing.B) { benchQueries(b, openNgrokNull(b)) }

// BenchmarkQueryOverhead alternates an unwrapped query, one through
// ngrok/sqlmw with an interceptor that does nothing, and one through the
// wrapper (in-process backend), each on its own in-memory SQLite
// connection, so that all three see the same machine load. It reports the
// median time of each and the differences of the medians: the wrapper's
// overhead per query, and the part of it that is ngrok/sqlmw's.
func BenchmarkQueryOverhead(b *testing.B) {
	raw := openRaw(b)
	defer raw.Close()
	null := openNgrokNull(b)
	defer null.Close()
	wrapped, err := sqlmw.Open("sqlite", "file::memory:", core.NewLocal(1<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer wrapped.Close()
	ctx := context.Background()
	var n int64
	var rawNs, nullNs, wrappedNs []int64
	query := func(db *sql.DB, i int) int64 {
		start := time.Now()
		if err := db.QueryRowContext(ctx, "SELECT ?", i).Scan(&n); err != nil {
			b.Fatal(err)
		}
		return int64(time.Since(start))
	}
	for _, db := range []*sql.DB{raw, null, wrapped} {
		db.SetMaxOpenConns(1)
		query(db, 0)
	}
	for i := 0; b.Loop(); i++ {
		rawNs = append(rawNs, query(raw, i))
		nullNs = append(nullNs, query(null, i))
		wrappedNs = append(wrappedNs, query(wrapped, i))
	}
	r, nl, w := median(rawNs), median(nullNs), median(wrappedNs)
	b.ReportMetric(float64(r), "raw-ns/query")
	b.ReportMetric(float64(w), "wrapped-ns/query")
	b.ReportMetric(float64(w-r), "overhead-ns/query")
	b.ReportMetric(float64(nl-r), "ngrok-ns/query")
}

func openRaw(b *testing.B) *sql.DB {
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		b.Fatal(err)
	}
	return db
}

func openNgrokNull(b *testing.B) *sql.DB {
	raw := openRaw(b)
	d := raw.Driver()
	raw.Close()
	c, err := ngsqlmw.Driver(d, ngsqlmw.NullInterceptor{}).(driver.DriverContext).OpenConnector("file::memory:")
	if err != nil {
		b.Fatal(err)
	}
	return sql.OpenDB(c)
}

func median(v []int64) int64 {
	slices.Sort(v)
	return v[len(v)/2]
}
