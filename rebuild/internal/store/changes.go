package store

import (
	"context"
	"fmt"
)

// DataVersion returns PRAGMA data_version read on a connection kept for it
// that never writes, so that the value changes exactly when a transaction
// of another connection (any process, the library's writer included)
// committed since the last read. Only sources without a log need it (a
// source never attached, open read-only; one whose triggers were lost):
// the log's head tells the others. The connection is opened at first use,
// outside the readers' pool; one caller reads at a time (dv, a token ctx
// can abandon).
func (db *DB) DataVersion(ctx context.Context) (int64, error) {
	select {
	case db.dv <- struct{}{}:
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	}
	defer func() { <-db.dv }()
	if db.dvConn == nil {
		sc, err := db.r.Conn(ctx)
		if err != nil {
			return 0, fmt.Errorf("read data version: %w", err)
		}
		db.dvConn = newConn(db, sc)
	}
	return db.dvConn.Version(ctx)
}

// Schema returns the schema cookie, read on a reading connection of the
// pool.
func (db *DB) Schema(ctx context.Context) (int64, error) {
	c, err := db.Reader(ctx)
	if err != nil {
		return 0, err
	}
	defer db.Release(c)
	return c.Schema(ctx)
}

// Schema returns the schema cookie (PRAGMA schema_version). It is the
// first statement of a source's resolution: a hot journal that stops it
// is rolled back (see Conn.each).
func (c *Conn) Schema(ctx context.Context) (int64, error) {
	var v int64
	err := c.QueryRowContext(ctx, `PRAGMA schema_version`).Scan(&v)
	if again, aerr := c.afterHotJournal(ctx, err); again {
		err = c.QueryRowContext(ctx, `PRAGMA schema_version`).Scan(&v)
	} else {
		err = aerr
	}
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// dataVersion is the connection DataVersion reads on.
type dataVersion struct {
	dv     chan struct{} // capacity 1: held by the one reading dvConn
	dvConn *Conn
}
