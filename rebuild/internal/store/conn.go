package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
)

// Conn is a reading connection of the library with the statements prepared
// on it, used by one goroutine at a time.
type Conn struct {
	sc    *sql.Conn
	stmts map[string]driver.Stmt // prepared on sc's driver connection, by SQL text
	db    *DB
}

// Version returns the connection's PRAGMA data_version: another value
// means another connection committed since the connection last read.
func (c *Conn) Version(ctx context.Context) (v int64, err error) {
	defer wrap(&err, "read data version")
	return firstInt(ctx, c, `PRAGMA data_version`)
}

// Schema returns the schema cookie (PRAGMA schema_version).
func (c *Conn) Schema(ctx context.Context) (v int64, err error) {
	defer wrap(&err, "read schema version")
	return firstInt(ctx, c, `PRAGMA schema_version`)
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

// each runs q, prepared once per connection, and calls fn for every row,
// read into dest (reused). A hot journal that stops the read-only
// connection before the first row is rolled back by the writer, once it
// has checked the file (DB.rollBackHotJournal), and q runs again.
func (c *Conn) each(ctx context.Context, q string, dest []driver.Value, fn func() error, args ...driver.NamedValue) error {
	for retried := false; ; retried = true {
		rows := false
		err := c.raw(func(dc driver.Conn) error {
			r, err := c.query(ctx, dc, q, args)
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
		if rows || retried || !hotJournal(err) {
			return err
		}
		if rerr := c.db.rollBackHotJournal(ctx); rerr != nil {
			return fmt.Errorf("%w (%w)", rerr, err)
		}
	}
}

var (
	errNoRow = errors.New("no row") // where one was expected
	errStop  = errors.New("stop")   // ends an each loop early
)

// first runs q and reads its first row into dest.
func (c *Conn) first(ctx context.Context, q string, dest []driver.Value, args ...driver.NamedValue) error {
	err := c.each(ctx, q, dest, func() error { return errStop }, args...)
	switch err {
	case errStop:
		return nil
	case nil:
		return errNoRow
	}
	return err
}

// textValue is a text value, which a driver may hand over as bytes.
func textValue(v driver.Value) string {
	switch t := v.(type) {
	case string:
		return t
	case []byte:
		return string(t)
	}
	return ""
}

// firstInt runs q on r and returns the integer its first row holds.
func firstInt(ctx context.Context, r runner, q string, args ...driver.NamedValue) (int64, error) {
	var v [1]driver.Value
	if err := r.first(ctx, q, v[:], args...); err != nil {
		return 0, err
	}
	n, ok := v[0].(int64)
	if !ok {
		return 0, fmt.Errorf("unexpected value %v", v[0])
	}
	return n, nil
}

// eachKey runs q, whose rows are a key each (s.quote) or NULL, and hands
// fn every key (ok false for a NULL).
func (c *Conn) eachKey(ctx context.Context, s *Source, q string, fn func(k string, ok bool) error, args ...driver.NamedValue) error {
	dest := make([]driver.Value, 1)
	return c.each(ctx, q, dest, func() error {
		if dest[0] == nil {
			return fn("", false)
		}
		k, err := s.parseKey(dest[0])
		if err != nil {
			return err
		}
		return fn(k, true)
	}, args...)
}

// QueryRowContext runs a query through database/sql (off the hot paths).
func (c *Conn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return c.sc.QueryRowContext(c.db.Driver.QueryContext(ctx), q, args...)
}

// QueryContext runs a query through database/sql (off the hot paths).
func (c *Conn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return c.sc.QueryContext(c.db.Driver.QueryContext(ctx), q, args...)
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

// query runs q, prepared once per connection, under ctx, which every
// supported driver's statements take to interrupt them. A context that
// has already ended is refused here: older drivers may run the
// statement anyway (seen with mattn/go-sqlite3 v1.14.22 under the race
// detector and modernc.org/sqlite v1.29.0: their watch for the end of
// ctx starts with the statement).
func (c *Conn) query(ctx context.Context, dc driver.Conn, q string, args []driver.NamedValue) (driver.Rows, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, ok := c.stmts[q]
	if !ok {
		var err error
		if p, ok := dc.(driver.ConnPrepareContext); ok {
			st, err = p.PrepareContext(ctx, q)
		} else {
			st, err = dc.Prepare(q)
		}
		if err != nil {
			return nil, err
		}
		c.stmts[q] = st
	}
	qc, ok := st.(driver.StmtQueryContext)
	if !ok {
		return nil, fmt.Errorf("driver statement %T without QueryContext", st)
	}
	r, err := qc.QueryContext(c.db.Driver.QueryContext(ctx), args)
	if err == nil && c.db.Driver.columnsFirst {
		r.Columns()
	}
	return r, err
}
