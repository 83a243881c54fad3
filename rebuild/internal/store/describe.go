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
	if err := c.QueryRowContext(ctx, `SELECT count(*) FROM `+s.QTable+` WHERE `+s.QCol+` IS NOT NULL`).Scan(&d.Rows); err != nil {
		return d, fmt.Errorf("describe source: %w", err)
	}
	if !s.Row {
		return d, nil
	}
	var head, floor int64
	var logs, spellings int64 = 0, 0
	var exists [2]bool
	if err := c.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?),
		EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)`, s.Log, s.Spellings).Scan(&exists[0], &exists[1]); err != nil {
		return d, fmt.Errorf("describe source: %w", err)
	}
	if err := c.QueryRowContext(ctx, `SELECT log_floor, (SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN (?, ?))
		FROM `+SourcesTable+` WHERE id = ?`, s.Ins, s.Upd, s.ID).Scan(&floor, &d.Triggers); err != nil {
		return d, fmt.Errorf("describe source: %w", err)
	}
	if exists[0] {
		if err := c.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0), count(*) FROM `+s.Log).Scan(&head, &logs); err != nil {
			return d, fmt.Errorf("describe source: %w", err)
		}
	}
	if exists[1] {
		if err := c.QueryRowContext(ctx, `SELECT count(*) FROM `+s.Spellings).Scan(&spellings); err != nil {
			return d, fmt.Errorf("describe source: %w", err)
		}
	}
	d.Generation, d.LogFloor, d.LogEntries, d.Spellings = uint64(head), uint64(floor), logs, spellings
	var ok bool
	if err := c.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)`, SnapshotsTable).Scan(&ok); err != nil {
		return d, fmt.Errorf("describe source: %w", err)
	}
	if ok {
		if err := c.QueryRowContext(ctx, `SELECT count(*) FROM `+SnapshotsTable+` WHERE source = ?`, s.ID).Scan(&d.Records); err != nil {
			return d, fmt.Errorf("describe source: %w", err)
		}
	}
	return d, nil
}
