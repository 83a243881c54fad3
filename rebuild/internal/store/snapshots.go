package store

import (
	"context"
	"errors"
	"fmt"
)

// keepRecords is how many snapshot records a source keeps: the newest
// saves of every process stay loadable.
const keepRecords = 16

var errEpoch = errors.New("the source was attached again (its triggers had been lost) since this filter was built")

// RecordSnapshot records, before the file is renamed into place, that a
// snapshot of gen with m bits and this checksum is saved at path (where
// `syncfilter rebuild --all` writes the next); a generation the log has not
// reached, or a filter of another epoch, is refused. The snapshots the
// library saves are of KeyedVersion: from the first, the source accepts
// no older one.
func (db *DB) RecordSnapshot(ctx context.Context, s *Source, epoch uint64, sum [32]byte, gen, m uint64, path string) error {
	return db.update(ctx, "record snapshot", func(tx *Tx) error {
		var head, cur int64
		if err := tx.QueryRowContext(ctx, `SELECT coalesce((SELECT max(seq) FROM `+s.Log+`), 0), epoch FROM `+SourcesTable+` WHERE id = ?`, s.ID).Scan(&head, &cur); err != nil {
			return err
		}
		switch {
		case uint64(cur) != epoch:
			return errEpoch
		case gen > uint64(head):
			return fmt.Errorf("generation %d ahead of the log's %d", gen, head)
		}
		err := tx.exec(`INSERT OR REPLACE INTO `+SnapshotsTable+` (source, checksum, generation, m) VALUES (?, ?, ?, ?)`,
			s.ID, sum[:], int64(gen), int64(m))
		if err == nil {
			err = tx.exec(`DELETE FROM `+SnapshotsTable+` WHERE source = ?1 AND checksum NOT IN
		(SELECT checksum FROM `+SnapshotsTable+` WHERE source = ?1 ORDER BY saved_at DESC, generation DESC LIMIT ?2)`, s.ID, keepRecords)
		}
		if err == nil {
			err = tx.exec(`UPDATE `+SourcesTable+` SET snapshot = ?, lowest_version = max(lowest_version, ?) WHERE id = ?`, path, KeyedVersion, s.ID)
		}
		return err
	})
}

// Vouched reports whether the database recorded the snapshot: a database
// restored from a backup, or a forged file, has no record.
func (c *Conn) Vouched(ctx context.Context, s *Source, sum [32]byte, gen, m uint64) (bool, error) {
	ok, err := hasTable(ctx, c, SnapshotsTable)
	if err != nil || !ok {
		return false, err
	}
	err = c.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+SnapshotsTable+`
		WHERE source = ? AND checksum = ? AND generation = ? AND m = ?)`, s.ID, sum[:], int64(gen), int64(m)).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("check snapshot record: %w", err)
	}
	return ok, nil
}

// FileBytes returns the database's size as SQLite counts it (pages × page
// size), read from the header: a bound on what the source can hold.
func (c *Conn) FileBytes(ctx context.Context) (int64, error) {
	var pages, size int64
	if err := c.QueryRowContext(ctx, `SELECT p.page_count, s.page_size FROM pragma_page_count() p, pragma_page_size() s`).Scan(&pages, &size); err != nil {
		return 0, fmt.Errorf("read database size: %w", err)
	}
	return pages * size, nil
}
