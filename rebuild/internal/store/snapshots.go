package store

import (
	"context"
	"errors"
	"fmt"
)

// syncfilter_snapshots(source, checksum, generation, m, saved_at): one row
// per snapshot saved (by an app or by the cron job), written before the
// file is renamed into place. A snapshot is loaded only if its stored
// checksum, generation and m have a row: the database vouches for the
// file. A database restored from a backup has no row for a snapshot saved
// after the backup; a forged file has no row.

// keepRecords is how many snapshot records a source keeps: the newest
// saves of every process (app instances, the cron job) stay loadable.
const keepRecords = 16

// errEpoch is a write refused because the source was attached again since
// the caller's filter was built.
var errEpoch = errors.New("the source was attached again (its triggers had been lost) since this filter was built")

// RecordSnapshot notes, in one transaction, that a snapshot with this
// checksum covering generation gen with m bits is being saved, and keeps
// only the newest keepRecords records. A generation the log has not
// reached is refused (no such state of this database exists), and so is a
// filter of an older epoch.
//
// path, the file's absolute name, is kept as the source's last snapshot
// (where `syncfilter rebuild --all` writes the next).
func (db *DB) RecordSnapshot(ctx context.Context, s *Source, epoch uint64, sum [32]byte, gen, m uint64, path string) (err error) {
	if db.w == nil {
		return fmt.Errorf("record snapshot: database opened read-only")
	}
	tx, err := db.w.Begin(ctx)
	if err != nil {
		return fmt.Errorf("record snapshot: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	var head, cur int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce((SELECT max(seq) FROM `+s.Log+`), 0), epoch FROM `+SourcesTable+` WHERE id = ?`, s.ID).Scan(&head, &cur); err != nil {
		return fmt.Errorf("record snapshot: %w", err)
	}
	switch {
	case uint64(cur) != epoch:
		return fmt.Errorf("record snapshot: %w", errEpoch)
	case gen > uint64(head):
		return fmt.Errorf("record snapshot: generation %d ahead of the log's %d", gen, head)
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO `+SnapshotsTable+` (source, checksum, generation, m) VALUES (?, ?, ?, ?)`,
		s.ID, sum[:], int64(gen), int64(m)); err != nil {
		return fmt.Errorf("record snapshot: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+SnapshotsTable+` WHERE source = ?1 AND checksum NOT IN
		(SELECT checksum FROM `+SnapshotsTable+` WHERE source = ?1 ORDER BY saved_at DESC, generation DESC LIMIT ?2)`,
		s.ID, keepRecords); err != nil {
		return fmt.Errorf("record snapshot: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE `+SourcesTable+` SET snapshot = ? WHERE id = ?`, path, s.ID); err != nil {
		return fmt.Errorf("record snapshot: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record snapshot: %w", err)
	}
	return nil
}

// Vouched reports whether the database recorded saving a snapshot with
// this checksum, generation and size for the source.
func (c *Conn) Vouched(ctx context.Context, s *Source, sum [32]byte, gen, m uint64) (bool, error) {
	var ok bool
	err := c.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)`, SnapshotsTable).Scan(&ok)
	if err != nil || !ok { // no snapshot was ever recorded
		return false, err
	}
	err = c.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+SnapshotsTable+`
		WHERE source = ? AND checksum = ? AND generation = ? AND m = ?)`, s.ID, sum[:], int64(gen), int64(m)).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("check snapshot record: %w", err)
	}
	return ok, nil
}

// FileBytes returns the database's size as SQLite counts it (pages ×
// page size): a bound on what the source can hold, read from the header
// without a scan.
func (c *Conn) FileBytes(ctx context.Context) (int64, error) {
	var pages, size int64
	if err := c.QueryRowContext(ctx, `SELECT p.page_count, s.page_size FROM pragma_page_count() p, pragma_page_size() s`).Scan(&pages, &size); err != nil {
		return 0, fmt.Errorf("read database size: %w", err)
	}
	return pages * size, nil
}
