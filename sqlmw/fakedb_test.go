package sqlmw_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
)

// fakeDriver is a database whose queries are commands:
//
//	"ROWS n"   returns n rows of one int64 column (n = -1: endless)
//	"FAIL"     fails with errFake
//	"SKIP"     answers driver.ErrSkip when called on the connection with
//	           arguments, and succeeds once prepared (like MySQL)
//	"BLOCK"    Exec signals on entered and waits for proceed
//
// Any other Exec succeeds. It counts calls that reached it.
type fakeDriver struct {
	calls     atomic.Int64
	failBegin atomic.Bool
	entered   chan struct{}
	proceed   chan struct{}
	commits   atomic.Int64
	rollbacks atomic.Int64
}

var errFake = errors.New("fake: query failed")

func newFakeDriver() *fakeDriver {
	return &fakeDriver{entered: make(chan struct{}), proceed: make(chan struct{})}
}

func (d *fakeDriver) Open(string) (driver.Conn, error) { return &fakeConn{d: d}, nil }

// Connect and Driver make fakeDriver a driver.Connector.
func (d *fakeDriver) Connect(context.Context) (driver.Conn, error) { return d.Open("") }
func (d *fakeDriver) Driver() driver.Driver                        { return d }

type fakeConn struct {
	d *fakeDriver
}

var (
	_ driver.ExecerContext  = (*fakeConn)(nil)
	_ driver.QueryerContext = (*fakeConn)(nil)
	_ driver.ConnBeginTx    = (*fakeConn)(nil)
	//lint:ignore SA1019 the legacy path is tested too
	_ driver.Queryer = (*fakeConn)(nil)
)

func (c *fakeConn) Prepare(query string) (driver.Stmt, error) {
	return &fakeStmt{c: c, query: query}, nil
}
func (c *fakeConn) Close() error              { return nil }
func (c *fakeConn) Begin() (driver.Tx, error) { return &fakeTx{d: c.d}, nil }

func (c *fakeConn) BeginTx(ctx context.Context, _ driver.TxOptions) (driver.Tx, error) {
	if c.d.failBegin.Load() {
		return nil, errFake
	}
	return &fakeTx{d: c.d}, ctx.Err()
}

func (c *fakeConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if query == "SKIP" && len(args) > 0 {
		return nil, driver.ErrSkip
	}
	return c.d.exec(ctx, query)
}

func (c *fakeConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if query == "SKIP" && len(args) > 0 {
		return nil, driver.ErrSkip
	}
	return c.d.query(query)
}

// Query is the legacy path, reached only through Conn.Raw.
func (c *fakeConn) Query(query string, _ []driver.Value) (driver.Rows, error) {
	return c.d.query(query)
}

// stripComment drops a leading /* ... */ comment, such as a key tag.
func stripComment(q string) string {
	if strings.HasPrefix(q, "/*") {
		if _, rest, ok := strings.Cut(q, "*/"); ok {
			return strings.TrimSpace(rest)
		}
	}
	return q
}

func (d *fakeDriver) exec(ctx context.Context, query string) (driver.Result, error) {
	d.calls.Add(1)
	query = stripComment(query)
	switch query {
	case "FAIL":
		return nil, errFake
	case "BLOCK":
		d.entered <- struct{}{}
		select {
		case <-d.proceed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return driver.RowsAffected(1), nil
}

func (d *fakeDriver) query(query string) (driver.Rows, error) {
	d.calls.Add(1)
	query = stripComment(query)
	if query == "FAIL" {
		return nil, errFake
	}
	if query == "SKIP" {
		return &fakeRows{left: 1}, nil
	}
	n, err := strconv.Atoi(strings.TrimPrefix(query, "ROWS "))
	if err != nil {
		return nil, errors.New("fake: bad query " + query)
	}
	return &fakeRows{left: n}, nil
}

type fakeStmt struct {
	c     *fakeConn
	query string
}

var (
	_ driver.StmtExecContext  = (*fakeStmt)(nil)
	_ driver.StmtQueryContext = (*fakeStmt)(nil)
)

func (s *fakeStmt) Close() error  { return nil }
func (s *fakeStmt) NumInput() int { return -1 }
func (s *fakeStmt) Exec([]driver.Value) (driver.Result, error) {
	return s.c.d.exec(context.Background(), s.query)
}
func (s *fakeStmt) Query([]driver.Value) (driver.Rows, error) { return s.c.d.query(s.query) }
func (s *fakeStmt) ExecContext(ctx context.Context, _ []driver.NamedValue) (driver.Result, error) {
	return s.c.d.exec(ctx, s.query)
}
func (s *fakeStmt) QueryContext(context.Context, []driver.NamedValue) (driver.Rows, error) {
	return s.c.d.query(s.query)
}

type fakeTx struct{ d *fakeDriver }

func (t *fakeTx) Commit() error   { t.d.commits.Add(1); return nil }
func (t *fakeTx) Rollback() error { t.d.rollbacks.Add(1); return nil }

type fakeRows struct {
	left int // -1: endless
	i    int64
}

func (r *fakeRows) Columns() []string { return []string{"n"} }
func (r *fakeRows) Close() error      { return nil }
func (r *fakeRows) Next(dest []driver.Value) error {
	if r.left == 0 {
		return io.EOF
	}
	if r.left > 0 {
		r.left--
	}
	r.i++
	dest[0] = r.i
	return nil
}

// fakeName is the fake driver registered for the tests of Register and
// Open. (A fixed name in init is fine in a test binary; library code must
// use Register.)
const fakeName = "distsem-fake"

var registeredFake = newFakeDriver()

func init() { sql.Register(fakeName, registeredFake) }
