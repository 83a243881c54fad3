package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
)

// writer is the library's writing connection. Every write (a transaction
// or a statement) first checks that the file at the path is still the one
// opened, with one name (SameFile): the library never writes through its
// name while the app writes through a second one (hard link: SQLite keeps
// a journal or WAL beside each name, and writes through two corrupt the
// database), nor into a file the app replaced.
type writer struct {
	*sql.DB
	db *DB
}

// Begin starts a write transaction: BEGIN IMMEDIATE on the writer's one
// connection, which takes the write lock at once (waiting up to the busy
// timeout), so that a transaction that reads before it writes never fails
// to upgrade its lock. It is spelled in SQL rather than through
// database/sql's BeginTx, whose locking each driver configures its own
// way.
func (w *writer) Begin(ctx context.Context) (*Tx, error) {
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
	return &Tx{c: c, ctx: ctx}, nil
}

func (w *writer) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := w.db.SameFile(); err != nil {
		return nil, err
	}
	return w.DB.ExecContext(ctx, query, args...)
}

// Tx is a write transaction on the writer's connection. Its statements
// take the context they are given; Commit gives up (and rolls back) if
// the context Begin was given ended.
type Tx struct {
	c    *sql.Conn
	ctx  context.Context
	done bool
}

func (t *Tx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.c.ExecContext(ctx, q, args...)
}

func (t *Tx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.c.QueryRowContext(ctx, q, args...)
}

func (t *Tx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.c.QueryContext(ctx, q, args...)
}

// execEach runs q once for each of n argument lists (args(i)) with one
// statement prepared on the transaction's connection, and closes it before
// it returns. Such a statement must not outlive the transaction: once
// Commit or Rollback gives the connection back, the pool may close it
// (while the database is quiesced, at once), and database/sql does not
// track statements prepared on a Conn, so closing one later finalizes it
// on a closed connection (modernc.org/sqlite then crashes).
func (t *Tx) execEach(ctx context.Context, q string, n int, args func(i int) []any) error {
	st, err := t.c.PrepareContext(ctx, q)
	if err != nil {
		return err
	}
	defer st.Close()
	for i := range n {
		if _, err := st.ExecContext(ctx, args(i)...); err != nil {
			return err
		}
	}
	return nil
}

// Commit commits the transaction; if that fails, it is rolled back.
func (t *Tx) Commit() error {
	if t.done {
		return sql.ErrTxDone
	}
	if err := context.Cause(t.ctx); err != nil {
		_ = t.Rollback()
		return err
	}
	t.done = true
	if _, err := t.c.ExecContext(context.WithoutCancel(t.ctx), `COMMIT`); err != nil {
		t.done = false
		_ = t.Rollback()
		return fmt.Errorf("commit: %w", err)
	}
	_ = t.c.Close()
	return nil
}

// Rollback rolls the transaction back (nothing if it is over). A
// connection whose rollback fails is discarded: closing it ends the
// transaction.
func (t *Tx) Rollback() error {
	if t.done {
		return nil
	}
	t.done = true
	_, err := t.c.ExecContext(context.WithoutCancel(t.ctx), `ROLLBACK`)
	if err != nil {
		discard(t.c)
		return nil // SQLite rolled back already (an interrupted write), or closing does
	}
	_ = t.c.Close()
	return nil
}

// discard closes c's driver connection instead of returning it to the
// pool.
func discard(c *sql.Conn) {
	_ = c.Raw(func(any) error { return driver.ErrBadConn })
	_ = c.Close()
}
