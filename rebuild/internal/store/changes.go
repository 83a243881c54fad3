package store

import "context"

// Changes is PRAGMA data_version as DataVersion read it, with its
// connection: two values are equal (==) only when read on the same
// connection with nothing committed by another in between.
type Changes struct {
	conn *Conn
	v    int64
}

// DataVersion reads PRAGMA data_version on a connection of its own that
// never writes, so that it changes exactly when another connection (the
// library's writer included) committed. One caller reads at a time (the
// dv token); while quiesced the connection is closed after each read.
func (db *DB) DataVersion(ctx context.Context) (ch Changes, err error) {
	select {
	case db.dv <- struct{}{}:
	case <-ctx.Done():
		return Changes{}, context.Cause(ctx)
	}
	if db.dvConn == nil {
		db.dvConn, err = db.openConn(ctx)
	}
	if err == nil {
		ch.conn = db.dvConn
		ch.v, err = db.dvConn.Version(ctx)
	} else {
		wrap(&err, "read data version")
	}
	<-db.dv
	if db.pool.isQuiet() { // Quiesce sets the flag before it tries the token
		db.closeDV(false)
	}
	return ch, err
}

// closeDV closes dvConn under the dv token; unless wait, it leaves that to
// the token's holder, which looks at the quiet flag once done.
func (db *DB) closeDV(wait bool) {
	if wait {
		db.dv <- struct{}{}
	} else {
		select {
		case db.dv <- struct{}{}:
		default:
			return
		}
	}
	if db.dvConn != nil {
		db.dvConn.close()
		db.dvConn = nil
	}
	<-db.dv
}
