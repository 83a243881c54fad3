package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
)

// Conn is a reading connection held by the library, with the statements
// prepared on it. One goroutine uses it at a time: the one that took it
// from the pool (or the freshness check).
type Conn struct {
	sc    *sql.Conn
	stmts map[string]driver.Stmt // prepared on sc's driver connection, by SQL text
	db    *DB                    // whose writer rolls back a hot journal (each)

	// notes holds, by a key of the caller's (one per index), what the
	// last probe on this connection for that key told the caller, with the
	// probe's data_version. Reading connections never write, so while
	// Version returns the same value no connection of any process
	// committed since that probe: the database is as it read it. Numbers
	// only, so that a note keeps nothing alive. Used only by the
	// connection's holder.
	notes map[uint64]Note
}

// Note is a conclusion drawn from one probe, valid while the connection's
// data_version stays Version: which filter and which binding of the
// source the probe validated (the caller's numbers), and the log head it
// caught the filter up to.
type Note struct {
	Version               int64
	Filter, Binding, Head uint64
}

// Note records a conclusion for key.
func (c *Conn) Note(key uint64, n Note) {
	if c.notes == nil {
		c.notes = make(map[uint64]Note)
	}
	c.notes[key] = n
}

// Noted returns the conclusion last recorded for key.
func (c *Conn) Noted(key uint64) (Note, bool) {
	n, ok := c.notes[key]
	return n, ok
}

// Version returns the connection's PRAGMA data_version: a new value means
// another connection committed since the connection last read.
func (c *Conn) Version(ctx context.Context) (int64, error) {
	var vals [1]driver.Value
	if err := c.first(ctx, `PRAGMA data_version`, vals[:]); err != nil {
		return 0, fmt.Errorf("read data version: %w", err)
	}
	v, ok := vals[0].(int64)
	if !ok {
		return 0, fmt.Errorf("read data version: unexpected value %v", vals[0])
	}
	return v, nil
}

// newConn wraps a reading connection of db.
func newConn(db *DB, sc *sql.Conn) *Conn {
	return &Conn{sc: sc, db: db, stmts: map[string]driver.Stmt{}}
}

// raw runs fn on the driver connection.
func (c *Conn) raw(fn func(dc driver.Conn) error) error {
	return c.sc.Raw(func(x any) error {
		dc, ok := x.(driver.Conn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", x)
		}
		return fn(dc)
	})
}

// prepared returns q prepared on dc, once per connection.
func (c *Conn) prepared(ctx context.Context, dc driver.Conn, q string) (driver.Stmt, error) {
	if st, ok := c.stmts[q]; ok {
		return st, nil
	}
	st, err := prepare(ctx, dc, q)
	if err != nil {
		return nil, err
	}
	c.stmts[q] = st
	return st, nil
}

// each runs q with args and hands every row to fn, in dest (reused: copy
// what must outlive the call). ctx interrupts the statement. A hot journal
// that stops the (read-only) connection before the first row is rolled
// back by the database's writer, and q runs again (see
// DB.rollBackHotJournal).
func (c *Conn) each(ctx context.Context, q string, dest []driver.Value, fn func() error, args ...driver.NamedValue) error {
	rows, err := c.eachOnce(ctx, q, dest, fn, args...)
	if err != nil && !rows {
		var again bool
		if again, err = c.afterHotJournal(ctx, err); again {
			_, err = c.eachOnce(ctx, q, dest, fn, args...)
		}
	}
	return err
}

// afterHotJournal looks at the error of a statement that read no row yet:
// a hot journal stopped the (read-only) connection. The writer rolls it
// back, once it has checked the file (again: run the statement again), or
// refuses: ErrReplaced when the journal is the transaction of the file now
// at the path, not this one's.
func (c *Conn) afterHotJournal(ctx context.Context, err error) (again bool, _ error) {
	if !hotJournal(err) || c.db == nil {
		return false, err
	}
	if rerr := c.db.rollBackHotJournal(ctx); rerr != nil {
		return false, fmt.Errorf("%w (%w)", rerr, err)
	}
	return true, nil
}

// eachOnce is each without the retry; rows reports whether fn saw a row.
func (c *Conn) eachOnce(ctx context.Context, q string, dest []driver.Value, fn func() error, args ...driver.NamedValue) (rows bool, err error) {
	err = c.raw(func(dc driver.Conn) error {
		st, err := c.prepared(ctx, dc, q)
		if err != nil {
			return err
		}
		r, err := c.query(ctx, st, args)
		if err != nil {
			return err
		}
		defer r.Close()
		for {
			if err := r.Next(dest); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
			rows = true
			if err := fn(); err != nil {
				return err
			}
		}
	})
	return rows, err
}

// errNoRow is a query that returned no row where one was expected.
var errNoRow = errors.New("no row")

// first runs q and reads its first row into dest.
func (c *Conn) first(ctx context.Context, q string, dest []driver.Value, args ...driver.NamedValue) error {
	seen := false
	err := c.each(ctx, q, dest, func() error { seen = true; return errStop }, args...)
	switch {
	case err == errStop:
		return nil
	case err != nil:
		return err
	case !seen:
		return errNoRow
	}
	return nil
}

// errStop ends an each loop early.
var errStop = errors.New("stop")

// QueryRowContext runs a query through database/sql, for statements off
// the hot path.
func (c *Conn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return c.sc.QueryRowContext(ctx, q, args...)
}

// QueryContext runs a query through database/sql, for statements off the
// hot path.
func (c *Conn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return c.sc.QueryContext(ctx, q, args...)
}

// close closes the statements and the connection.
func (c *Conn) close() {
	_ = c.raw(func(driver.Conn) error {
		for _, st := range c.stmts {
			_ = st.Close()
		}
		return nil
	})
	clear(c.stmts)
	_ = c.sc.Close()
}

// query runs a prepared statement; every supported driver's statements
// take a context, which interrupts them.
func (c *Conn) query(ctx context.Context, st driver.Stmt, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := st.(driver.StmtQueryContext)
	if !ok {
		return nil, fmt.Errorf("driver statement %T without QueryContext", st)
	}
	r, err := q.QueryContext(ctx, args)
	if err == nil && c.db.Driver.columnsFirst {
		r.Columns()
	}
	return r, err
}
