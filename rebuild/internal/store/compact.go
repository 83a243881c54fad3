package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Compact deletes log entries below upTo and raises the floor to upTo, so
// that a process whose filter is older knows it must rebuild; the entry
// at the floor stays, so that a filter that read up to it can still check
// that the log holds what it read (Head.Tag). It keeps every
// entry a live scan lease holds, every entry the spellings table does not
// cover yet (above spellings_gen), and always the newest entry: without
// AUTOINCREMENT, SQLite numbers a new row one past the largest, so the
// sequence never goes back. Nothing is compacted before a full scan of
// the current epoch completed.
func (db *DB) Compact(ctx context.Context, s *Source, upTo uint64) error {
	tx, err := db.w.Begin(ctx)
	if err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var held sql.NullInt64
	var spellingsGen int64
	var scanned bool
	err = tx.QueryRowContext(ctx, `SELECT (SELECT min(generation) FROM `+ScansTable+` WHERE source = ?1 AND expires >= ?2),
		spellings_gen, scanned FROM `+SourcesTable+` WHERE id = ?1`, s.ID, time.Now().Unix()).Scan(&held, &spellingsGen, &scanned)
	if err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	if !scanned {
		return nil
	}
	if held.Valid && uint64(held.Int64) < upTo {
		upTo = uint64(held.Int64)
	}
	upTo = min(upTo, uint64(spellingsGen))
	if _, err := tx.ExecContext(ctx, `UPDATE `+SourcesTable+` SET log_floor = max(log_floor, ?) WHERE id = ?`, int64(upTo), s.ID); err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+s.Log+` WHERE seq < ? AND seq < (SELECT max(seq) FROM `+s.Log+`)`, int64(upTo)); err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+s.Spellings+` WHERE NOT EXISTS (SELECT 1 FROM `+s.QTable+` t WHERE t.`+s.QCol+` = stored)`); err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	return nil
}
