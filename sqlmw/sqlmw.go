package sqlmw

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	ngsqlmw "github.com/ngrok/sqlmw"

	"github.com/distsem/distsem/core"
)

// registered numbers the driver names Register generates.
var registered atomic.Int64

// maxRegisterTries bounds the search for a free driver name; database/sql
// itself holds at most this many drivers in practice.
const maxRegisterTries = 1000

// Register registers a throttled copy of the driver registered as
// driverName and returns the new driver's name, "<driverName>-distsem-<n>",
// which is unique in the process: sql.Register panics on a duplicate, so
// Register never uses a fixed name and may be called any number of times.
// Pass the name to sql.Open. Register returns an error if driverName is not
// registered. It panics if sem is nil and WithKeyed is not given.
func Register(driverName string, sem core.Semaphore, opts ...Option) (string, error) {
	d, err := lookup(driverName)
	if err != nil {
		return "", err
	}
	wd := WrapDriver(d, sem, opts...)
	for range maxRegisterTries {
		name := fmt.Sprintf("%s-distsem-%d", driverName, registered.Add(1))
		if tryRegister(name, wd) {
			return name, nil
		}
	}
	return "", errors.New("sqlmw: no free driver name")
}

// tryRegister registers d unless the name is taken (sql.Register panics).
func tryRegister(name string, d driver.Driver) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	sql.Register(name, d)
	return true
}

// lookup returns the driver registered as name. database/sql has no direct
// way to ask, so it opens a handle (which connects to nothing) and asks it.
func lookup(name string) (driver.Driver, error) {
	db, err := sql.Open(name, "")
	if err != nil {
		return nil, fmt.Errorf("sqlmw: driver %q: %w", name, err)
	}
	d := db.Driver()
	_ = db.Close()
	return d, nil
}

// Open opens a database through a throttled copy of the driver registered
// as driverName, with dataSourceName as sql.Open would. Like sql.Open it
// connects to nothing; use Ping to check. It returns an error if the
// driver is not registered or rejects the name. It panics if sem is nil
// and WithKeyed is not given.
func Open(driverName, dataSourceName string, sem core.Semaphore, opts ...Option) (*sql.DB, error) {
	d, err := lookup(driverName)
	if err != nil {
		return nil, err
	}
	var c driver.Connector = dsnConnector{dsn: dataSourceName, d: d}
	if dc, ok := d.(driver.DriverContext); ok {
		if c, err = dc.OpenConnector(dataSourceName); err != nil {
			return nil, err
		}
	}
	return OpenDB(c, sem, opts...), nil
}

// OpenDB opens a database on connector c, throttled by sem, as sql.OpenDB
// would. If c implements io.Closer, closing the DB closes it. It panics if
// sem is nil and WithKeyed is not given.
func OpenDB(c driver.Connector, sem core.Semaphore, opts ...Option) *sql.DB {
	wd := WrapDriver(connectorDriver{c}, sem, opts...)
	// connectorDriver.OpenConnector returns c, so this cannot fail.
	wc, err := wd.(driver.DriverContext).OpenConnector("")
	if err != nil {
		panic("sqlmw: " + err.Error())
	}
	if cl, ok := c.(io.Closer); ok {
		wc = closingConnector{Connector: wc, closer: cl}
	}
	return sql.OpenDB(wc)
}

// WrapDriver returns d throttled by sem. Register the result with
// sql.Register (or use Register, which picks a free name). It panics if sem
// is nil and WithKeyed is not given.
func WrapDriver(d driver.Driver, sem core.Semaphore, opts ...Option) driver.Driver {
	return ngsqlmw.Driver(d, newInterceptor(sem, opts))
}

// connectorDriver lets ngrok/sqlmw, which wraps drivers, wrap a connector.
type connectorDriver struct{ c driver.Connector }

func (d connectorDriver) Open(string) (driver.Conn, error) {
	return d.c.Connect(context.Background())
}

func (d connectorDriver) OpenConnector(string) (driver.Connector, error) { return d.c, nil }

// dsnConnector is the connector of a driver that has none of its own.
type dsnConnector struct {
	dsn string
	d   driver.Driver
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.d }

// closingConnector keeps the io.Closer of the connector it wraps.
type closingConnector struct {
	driver.Connector
	closer io.Closer
}

func (c closingConnector) Close() error { return c.closer.Close() }
