// Package sqlmw throttles database/sql queries with a distsem semaphore, so
// that a whole fleet of processes never runs more than K queries at once
// against one database. database/sql's SetMaxOpenConns caps one process
// only.
//
// It wraps any database/sql driver with github.com/ngrok/sqlmw. The API
// follows otelsql: Register returns a new, unique driver name; Open and
// OpenDB return a *sql.DB; WrapDriver returns a driver.Driver.
//
//	sem := redissem.New(client, "orders-db", 8) // 8 queries fleet-wide
//	db, err := sqlmw.Open("pgx", dsn, sem, sqlmw.WithMaxWait(5*time.Second))
//
// What the semaphore itself guarantees (FIFO, leases, the failure policy)
// is in https://github.com/distsem/distsem/blob/main/docs/GUARANTEES.md.
//
// # One permit per query
//
//   - Exec (on the DB, a Conn, a Tx or a Stmt) holds its permit while the
//     driver call runs and releases it when the call returns.
//   - Query holds its permit until the Rows are closed, because the server
//     is still working while rows stream. QueryRow(...).Scan closes its
//     Rows, and so does database/sql when the query's context ends. Always
//     close Rows (defer rows.Close()), as you must anyway to free the
//     connection: Rows left open keep the permit until their context ends.
//   - A panic in a Scanner's Scan leaves database/sql's read lock on the
//     Rows held (an upstream bug, with or without this package), so
//     rows.Close then blocks forever. The permit is released anyway when
//     the query's context ends; a query run without a context that ends
//     (Query, or QueryContext with context.Background) keeps it until
//     WithMaxHold (default 1h) passes, after which it is released while
//     the Rows stay open (HoldForever: for the life of the process).
//     Recover such panics in a request whose context ends, or use a
//     context with a deadline.
//   - An error from the driver, driver.ErrSkip included, releases the permit
//     at once. database/sql answers ErrSkip (sent e.g. by MySQL for queries
//     with arguments) by preparing a statement and running it; that second
//     call takes a permit of its own, so one query costs two backend round
//     trips but never holds two permits.
//   - Ping, Prepare, Begin, Commit and Rollback take no permit (except
//     Begin in PerTransaction mode).
//   - The permit is released with a context detached from the query's,
//     which is often cancelled by then, plus WithReleaseTimeout.
//
// database/sql picks a pool connection before the driver sees the query,
// so a query waiting for its permit holds an idle connection meanwhile.
//
// # Transactions and the deadlocks avoided
//
// PerStatement (the default) throttles statements inside a transaction like
// any other. A transaction then waits for permits while holding row locks:
// if the K permit holders block on those locks, nobody progresses until a
// lock timeout or WithMaxWait ends the wait. The same holds for one
// goroutine that keeps Rows open and runs a second query: with K = 1 it
// waits for its own permit.
//
// PerTransaction takes one permit in Begin and holds it until Commit or
// Rollback; statements inside the transaction take none. Without that
// rule a transaction would hold one permit and wait for another for each
// statement: with K = 1 the first statement deadlocks on its own
// transaction's permit, and with K concurrent transactions every one waits
// for a permit that only the others can free. The wrapper recognises a
// transaction's statements by their driver connection (prepared
// statements included), so this needs drivers whose connections and
// statements are pointers, as they are in all common drivers; otherwise
// Begin fails with an Error matching core.ErrInvalidArgument.
//
// # Keys, waits and failures
//
// WithKeyed gives classes of queries their own limits, chosen per query by
// a classifier such as CommentKey, which reads /* distsem:reports */ and
// only from real block comments, never from literals, quoted identifiers
// or line comments; its keys are at most MaxCommentKeyLen bytes.
// WithMaxWait bounds the wait for a permit.
//
// A query whose ctx carries a flow and a level (core.ContextWithFlow, which
// httpmw, grpcmw and echomw set from their WithFlow) waits for its permit
// in that flow, on a semaphore with flows: one tenant's batch of queries
// then cannot hold up another's.
//
// What happens when the Redis backend is down is chosen on the semaphore,
// with core.WithFailurePolicy: FailClosed (the default) fails the query,
// FailOpen runs it unthrottled, FailLocal(k) throttles per process. A query
// that gets no permit fails with an *Error whose message is fixed and
// carries no internal detail, and whose cause matches core.ErrNoPermit,
// context.Canceled, core.ErrUnavailable or core.ErrClosed with errors.Is.
// It never reaches the database.
//
// # Limits of the wrapper
//
// The driver's connections must implement driver.ExecerContext or
// driver.Execer (ngrok/sqlmw relies on it; every common driver does). The
// legacy methods without a context (driver.Queryer, driver.Execer,
// Conn.Begin) are not throttled; database/sql never calls them through the
// wrapper.
package sqlmw
