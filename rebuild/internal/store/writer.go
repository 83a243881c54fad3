package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
)

// update runs fn in a write transaction on the writer and commits it; its
// errors say what. It begins only while SameFile holds (writes through a
// second name corrupt the file; a replaced file is not ours), with BEGIN
// IMMEDIATE: the write lock at once, so that a transaction that reads first
// never fails to upgrade it (drivers configure BeginTx each its own way).
func (db *DB) update(ctx context.Context, what string, fn func(*Tx) error) (err error) {
	defer wrap(&err, what)
	if db.w == nil {
		return errors.New("database opened read-only")
	}
	if err := db.SameFile(); err != nil {
		return err
	}
	c, err := db.w.Conn(ctx)
	if err != nil {
		return err
	}
	if _, err := c.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		discard(c)
		return err
	}
	tx := &Tx{Conn: c, ctx: ctx, drv: db.Driver, plain: db.plain}
	defer tx.rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.commit()
}

// Tx is a write transaction on the writer's connection.
type Tx struct {
	*sql.Conn
	ctx   context.Context // the context update was given
	done  bool
	drv   *Driver
	plain bool // the DB's dialect
}

// QueryRowContext runs a query in the transaction (Driver.QueryContext).
func (t *Tx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.Conn.QueryRowContext(t.drv.QueryContext(ctx), q, args...)
}

// QueryContext runs a query in the transaction (Driver.QueryContext).
func (t *Tx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.Conn.QueryContext(t.drv.QueryContext(ctx), q, args...)
}

// exec runs q with args.
func (t *Tx) exec(q string, args ...any) error {
	_, err := t.ExecContext(t.ctx, q, args...)
	return err
}

// execAll runs statements without arguments, in turn.
func (t *Tx) execAll(stmts ...string) error {
	for _, q := range stmts {
		if err := t.exec(q); err != nil {
			return err
		}
	}
	return nil
}

// execEach runs q with each of n argument lists, prepared once and closed
// before the transaction ends: database/sql does not track a statement
// prepared on a Conn, and one closed after its connection was (a quiesced
// pool closes it at once) crashes modernc.org/sqlite.
func (t *Tx) execEach(q string, n int, args func(i int) []any) error {
	st, err := t.PrepareContext(t.ctx, q)
	if err != nil {
		return err
	}
	defer st.Close()
	for i := range n {
		if _, err := st.ExecContext(t.ctx, args(i)...); err != nil {
			return err
		}
	}
	return nil
}

// commit commits, unless the context ended (the deferred rollback follows).
func (t *Tx) commit() error {
	if err := context.Cause(t.ctx); err != nil {
		return err
	}
	if _, err := t.ExecContext(context.WithoutCancel(t.ctx), `COMMIT`); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	t.done = true
	_ = t.Close()
	return nil
}

// rollback rolls back a transaction not committed. A connection whose
// ROLLBACK fails (SQLite already rolled back an interrupted write) is
// discarded: closing it ends the transaction.
func (t *Tx) rollback() {
	if t.done {
		return
	}
	t.done = true
	if _, err := t.ExecContext(context.WithoutCancel(t.ctx), `ROLLBACK`); err != nil {
		discard(t.Conn)
		return
	}
	_ = t.Close()
}

// discard closes c's driver connection instead of pooling it.
func discard(c *sql.Conn) {
	_ = c.Raw(func(any) error { return driver.ErrBadConn })
	_ = c.Close()
}
