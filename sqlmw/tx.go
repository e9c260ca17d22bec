package sqlmw

import (
	"context"
	"database/sql/driver"
	"fmt"
	"reflect"

	ngsqlmw "github.com/ngrok/sqlmw"

	"github.com/distsem/distsem/core"
)

// txState is a PerTransaction transaction: its permit and its driver
// connection.
type txState struct {
	permit *core.Permit
	conn   any
}

func (i *interceptor) ConnBeginTx(ctx context.Context, conn driver.ConnBeginTx, opts driver.TxOptions) (context.Context, driver.Tx, error) {
	if i.cfg.txMode != PerTransaction {
		tx, err := conn.BeginTx(ctx, opts)
		return ctx, tx, err
	}
	raw, ok := unwrap(conn)
	if !ok {
		return ctx, nil, &Error{msg: "sqlmw: PerTransaction mode needs comparable driver connections",
			err: fmt.Errorf("%w: driver connection type %T is not comparable", core.ErrInvalidArgument, raw)}
	}
	p, err := i.acquire(ctx, "")
	if err != nil {
		return ctx, nil, err
	}
	tx, err := conn.BeginTx(ctx, opts)
	if err != nil {
		i.release(ctx, p)
		return ctx, nil, err
	}
	i.mu.Lock()
	i.inTx[raw] = struct{}{}
	i.mu.Unlock()
	return context.WithValue(ctx, txKey{i}, &txState{permit: p, conn: raw}), tx, nil
}

func (i *interceptor) TxCommit(ctx context.Context, tx driver.Tx) error {
	defer i.endTx(ctx)
	return tx.Commit()
}

func (i *interceptor) TxRollback(ctx context.Context, tx driver.Tx) error {
	defer i.endTx(ctx)
	return tx.Rollback()
}

// endTx ends a PerTransaction transaction: its connection takes permits
// again and its permit is released.
func (i *interceptor) endTx(ctx context.Context) {
	if ctx == nil {
		return // a transaction from the legacy Begin, never used by database/sql
	}
	st, ok := ctx.Value(txKey{i}).(*txState)
	if !ok {
		return
	}
	i.mu.Lock()
	delete(i.inTx, st.conn)
	i.mu.Unlock()
	i.release(ctx, st.permit)
}

func (i *interceptor) ConnPrepareContext(ctx context.Context, conn driver.ConnPrepareContext, query string) (context.Context, driver.Stmt, error) {
	stmt, err := conn.PrepareContext(ctx, query)
	if err != nil || i.stmts == nil {
		return ctx, stmt, err
	}
	rawConn, ok1 := unwrap(conn)
	rawStmt, ok2 := unwrap(stmt)
	if ok1 && ok2 {
		i.mu.Lock()
		i.stmts[rawStmt] = rawConn
		i.mu.Unlock()
	}
	return ctx, stmt, nil
}

func (i *interceptor) StmtClose(ctx context.Context, stmt driver.Stmt) error {
	if i.stmts != nil {
		if raw, ok := unwrap(stmt); ok {
			i.mu.Lock()
			delete(i.stmts, raw)
			i.mu.Unlock()
		}
	}
	return stmt.Close()
}

// coveredByTx reports whether conn is inside a PerTransaction transaction,
// whose permit covers its statements.
func (i *interceptor) coveredByTx(conn any) bool {
	if i.inTx == nil {
		return false
	}
	raw, ok := unwrap(conn)
	if !ok {
		return false
	}
	i.mu.Lock()
	_, in := i.inTx[raw]
	i.mu.Unlock()
	return in
}

func (i *interceptor) stmtCoveredByTx(stmt any) bool {
	if i.inTx == nil {
		return false
	}
	raw, ok := unwrap(stmt)
	if !ok {
		return false
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	conn, known := i.stmts[raw]
	if !known {
		return false
	}
	_, in := i.inTx[conn]
	return in
}

// ngrokPkg is the import path of the adapters ngrok/sqlmw passes to
// interceptors.
var ngrokPkg = reflect.TypeOf(ngsqlmw.NullInterceptor{}).PkgPath()

// unwrap returns the driver's own connection or statement behind the
// single-field adapter ngrok/sqlmw passes to interceptors (wrappedParentConn,
// wrappedParentStmt), so that calls on one connection can be recognised.
// Values of other types are returned as they are. ok is false if the value
// cannot safely be a map key.
func unwrap(v any) (raw any, ok bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Struct && rv.Type().PkgPath() == ngrokPkg && rv.NumField() == 1 {
		if f := rv.Field(0); f.Kind() == reflect.Interface && f.CanInterface() && !f.IsNil() {
			v = f.Interface()
		}
	}
	t := reflect.TypeOf(v)
	if t == nil {
		return v, false
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Chan, reflect.UnsafePointer:
		return v, true
	}
	// A comparable struct may still hold an interface whose dynamic value
	// is not; only flat comparable values are safe.
	return v, t.Comparable() && t.Kind() != reflect.Struct && t.Kind() != reflect.Array && t.Kind() != reflect.Interface
}
