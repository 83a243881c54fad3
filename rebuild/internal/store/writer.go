package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
)

// writer is the library's one writing connection. Every write first checks
// SameFile: never write through a second name of the file (SQLite keeps a
// journal beside each name, and writes through two corrupt it), nor into a
// file the app put at the path.
type writer struct {
	*sql.DB
	db *DB
}

var errReadOnly = errors.New("database opened read-only")

// Begin starts a write transaction with BEGIN IMMEDIATE, which takes the
// write lock at once, so that a transaction that reads before it writes
// never fails to upgrade its lock (in SQL: each driver configures BeginTx's
// locking its own way).
func (w *writer) Begin(ctx context.Context) (*Tx, error) {
	if w == nil {
		return nil, errReadOnly
	}
	if err := w.db.SameFile(); err != nil {
		return nil, err
	}
	c, err := w.DB.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := c.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		discard(c)
		return nil, err
	}
	return &Tx{Conn: c, ctx: ctx}, nil
}

// update runs fn in a write transaction and commits it; its errors say what.
func (db *DB) update(ctx context.Context, what string, fn func(*Tx) error) error {
	tx, err := db.w.Begin(ctx)
	if err == nil {
		defer tx.Rollback()
		if err = fn(tx); err == nil {
			err = tx.Commit()
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// Tx is a write transaction on the writer's connection; exec runs under
// the context Begin was given, and Commit rolls back once it ended.
type Tx struct {
	*sql.Conn
	ctx  context.Context
	done bool
}

// exec runs q with args.
func (t *Tx) exec(q string, args ...any) error {
	_, err := t.Conn.ExecContext(t.ctx, q, args...)
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
	st, err := t.Conn.PrepareContext(t.ctx, q)
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

// Commit commits the transaction, or rolls it back if that fails.
func (t *Tx) Commit() error {
	if t.done {
		return sql.ErrTxDone
	}
	if err := context.Cause(t.ctx); err != nil {
		t.Rollback()
		return err
	}
	t.done = true
	if _, err := t.Conn.ExecContext(context.WithoutCancel(t.ctx), `COMMIT`); err != nil {
		t.done = false
		t.Rollback()
		return fmt.Errorf("commit: %w", err)
	}
	_ = t.Conn.Close()
	return nil
}

// Rollback rolls the transaction back, if it is not over. A connection
// whose ROLLBACK fails (SQLite already rolled back an interrupted write) is
// discarded: closing it ends the transaction.
func (t *Tx) Rollback() {
	if t.done {
		return
	}
	t.done = true
	if _, err := t.Conn.ExecContext(context.WithoutCancel(t.ctx), `ROLLBACK`); err != nil {
		discard(t.Conn)
		return
	}
	_ = t.Conn.Close()
}

// discard closes c's driver connection instead of pooling it.
func discard(c *sql.Conn) {
	_ = c.Raw(func(any) error { return driver.ErrBadConn })
	_ = c.Close()
}
