package store

import (
	"context"
	"database/sql/driver"
	"fmt"
)

// A lookup is the statement that answers one key that cannot be stored in
// another spelling (an ASCII key: its only spelling is itself) without
// the log, the filter or the spellings: whether the table holds it, byte
// for byte. It is exact by its own terms, whatever the schema is now:
// the comparison is forced to BINARY and to text values, so a migration
// that gave the column another collation or affinity cannot make it
// match another key (the source is resolved again, and refused, once a
// probe or the follower sees the new schema). With the column's BINARY
// collation the table's index serves it, as it serves the app's own
// `SELECT 1 … WHERE id = ?`. It is how one key is answered when the
// filter cannot rule it out alone: a maybe, or an "absent" while
// something committed since the last probe.

// lookupSQL returns the lookup statement: ?1 is the key.
func (s *Source) lookupSQL() string {
	return `SELECT EXISTS (SELECT 1 FROM ` + s.QTable + ` t WHERE ` + s.sameText("t", "?1") + `)`
}

// Lookup reports whether the source holds key as asked, looked up on the
// connection.
func (c *Conn) Lookup(ctx context.Context, s *Source, key string) (bool, error) {
	return lookup(ctx, c, s, key)
}

// AppLookup is Lookup on the app's pool (Options.App; AppFree says
// whether it would wait).
func (db *DB) AppLookup(ctx context.Context, s *Source, key string) (bool, error) {
	return lookup(ctx, db.app, s, key)
}

func lookup(ctx context.Context, r runner, s *Source, key string) (bool, error) {
	var vals [1]driver.Value
	if err := r.first(ctx, s.queries().lookup, vals[:], arg(1, key)); err != nil {
		return false, fmt.Errorf("look up in %s: %w", s.Table, err)
	}
	found, ok := vals[0].(int64)
	if !ok {
		return false, fmt.Errorf("look up in %s: unexpected value %v", s.Table, vals[0])
	}
	return found != 0, nil
}

// sameText is the condition that row alias t's key is val, byte for byte
// and as text: BINARY forced, whatever collation the column has now, and
// only text values, whatever affinity converted an INTEGER or REAL value
// to match. With the column's BINARY collation the table's index serves
// it.
func (s *Source) sameText(t, val string) string {
	col := t + `.` + s.QCol
	return col + ` = ` + val + ` COLLATE BINARY AND typeof(` + col + `) = 'text'`
}
