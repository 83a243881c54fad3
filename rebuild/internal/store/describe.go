package store

import (
	"context"
	"fmt"
)

// Description is what the database records about a source.
type Description struct {
	Rows       int64 // rows whose id is not NULL
	Generation uint64
	LogFloor   uint64
	LogEntries int64
	Spellings  int64
	Triggers   int // of the source's two triggers, how many exist
	Records    int64
}

// Describe reads what the database records about s (Rows counts the
// table: O(rows), for status reports only).
func (c *Conn) Describe(ctx context.Context, s *Source) (d Description, err error) {
	row := func(q string, args []any, dest ...any) {
		if err == nil {
			err = c.QueryRowContext(ctx, q, args...).Scan(dest...)
		}
	}
	has := func(table string) (ok bool) {
		if err == nil {
			ok, err = hasTable(ctx, c, table)
		}
		return ok
	}
	var head, floor int64
	row(`SELECT count(*) FROM `+s.QTable+` WHERE `+s.QCol+` IS NOT NULL`, nil, &d.Rows)
	if s.Row {
		row(`SELECT log_floor, (SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN (?, ?))
		FROM `+SourcesTable+` WHERE id = ?`, []any{s.Ins, s.Upd, s.ID}, &floor, &d.Triggers)
		if has(s.Log) {
			row(`SELECT coalesce(max(seq), 0), count(*) FROM `+s.Log, nil, &head, &d.LogEntries)
		}
		if has(s.Spellings) {
			row(`SELECT count(*) FROM `+s.Spellings, nil, &d.Spellings)
		}
		if has(SnapshotsTable) {
			row(`SELECT count(*) FROM `+SnapshotsTable+` WHERE source = ?`, []any{s.ID}, &d.Records)
		}
	}
	d.Generation, d.LogFloor = uint64(head), uint64(floor)
	if err != nil {
		return d, fmt.Errorf("describe source: %w", err)
	}
	return d, nil
}
