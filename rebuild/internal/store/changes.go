package store

import (
	"context"
	"fmt"
)

// Changes is PRAGMA data_version as DataVersion read it, with the
// connection it was read on: each connection counts on its own, so two
// values are equal only when read on the same connection with nothing
// committed by another in between. Compare them with == (the value holds
// its connection: no later one has its address).
type Changes struct {
	conn *Conn
	v    int64
}

// DataVersion returns PRAGMA data_version read on a connection kept for it
// that never writes, so that the value changes exactly when a transaction
// of another connection (any process, the library's writer included)
// committed since the last read: the follower polls it between calls,
// and calls on a source without a log (never attached, open read-only;
// one whose triggers were lost) read it, since no log head tells them.
// The connection is opened at first use, outside the readers' pool; one
// caller reads at a time (dv, a token ctx can abandon, held across the
// statement). While the database is quiesced the connection is closed
// again once read (closeQuietDV); the one opened next gives values
// unequal to every earlier one.
func (db *DB) DataVersion(ctx context.Context) (Changes, error) {
	select {
	case db.dv <- struct{}{}:
	case <-ctx.Done():
		return Changes{}, context.Cause(ctx)
	}
	v, err := db.readDataVersion(ctx)
	<-db.dv
	db.closeQuietDV()
	return v, err
}

// readDataVersion reads on dvConn, opening it if needed; the caller holds
// the dv token.
func (db *DB) readDataVersion(ctx context.Context) (Changes, error) {
	if db.dvConn == nil {
		sc, err := db.r.Conn(ctx)
		if err != nil {
			return Changes{}, fmt.Errorf("read data version: %w", err)
		}
		db.dvConn = newConn(db, sc)
	}
	v, err := db.dvConn.Version(ctx)
	return Changes{conn: db.dvConn, v: v}, err
}

// closeQuietDV closes dvConn if the database is quiesced, unless a caller
// holds the dv token: that caller does it when it gives the token back
// (it looks at the pool's quiet flag after giving it back, and Quiesce
// sets the flag before it tries the token), so nobody waits for a
// statement here.
func (db *DB) closeQuietDV() {
	if !db.pool.isQuiet() {
		return
	}
	select {
	case db.dv <- struct{}{}:
	default:
		return
	}
	if db.dvConn != nil {
		db.dvConn.close()
		db.dvConn = nil
	}
	<-db.dv
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
