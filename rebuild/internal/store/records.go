package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// This file holds the records shared by every source of a database:
//
//	syncfilter_snapshots(source, checksum, generation, m, saved_at):
//	  one row per snapshot saved (by an app or by the cron job), written
//	  before the file is renamed into place. A snapshot is loaded only if
//	  its stored checksum, generation and m have a row: the database
//	  vouches for the file. A database restored from a backup has no row
//	  for a snapshot saved after the backup; a forged file has no row.
//	syncfilter_scans(source, token, generation, expires):
//	  one row per rebuild scan in progress (a lease), so that log
//	  compaction by another process never deletes entries a running scan
//	  will need to catch up from.
//	syncfilter_holders(source, token, holder, expires):
//	  one row per open index that may write (renewed while it is open),
//	  so that Detach does not pull a source from under it.

const (
	// keepRecords is how many snapshot records a source keeps: the newest
	// saves of every process (app instances, the cron job) stay loadable.
	keepRecords = 16

	// LeaseTerm is how long a scan's lease or an index's hold lasts unless
	// renewed; a crashed process's expires after it.
	LeaseTerm = 10 * time.Minute
)

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

// Lease is a scan's hold on the log: compaction keeps every entry after
// its generation until it is released or expires.
type Lease struct {
	token   [16]byte
	renewed time.Time
}

// TakeLease registers a scan about to start, at the log's current head:
// the scan's own generation, read later, is at least that.
func (db *DB) TakeLease(ctx context.Context, s *Source) (*Lease, error) {
	l := &Lease{renewed: time.Now()}
	_, _ = rand.Read(l.token[:])
	_, err := db.w.ExecContext(ctx, `INSERT INTO `+ScansTable+` (source, token, generation, expires)
		VALUES (?, ?, (SELECT coalesce(max(seq), 0) FROM `+s.Log+`), ?)`,
		s.ID, l.token[:], time.Now().Add(LeaseTerm).Unix())
	if err != nil {
		return nil, fmt.Errorf("take scan lease: %w", err)
	}
	return l, nil
}

// RenewLease extends a lease held longer than a tenth of its term.
func (db *DB) RenewLease(ctx context.Context, s *Source, l *Lease) error {
	if time.Since(l.renewed) < LeaseTerm/10 {
		return nil
	}
	l.renewed = time.Now()
	if _, err := db.w.ExecContext(ctx, `UPDATE `+ScansTable+` SET expires = ? WHERE source = ? AND token = ?`,
		time.Now().Add(LeaseTerm).Unix(), s.ID, l.token[:]); err != nil {
		return fmt.Errorf("renew scan lease: %w", err)
	}
	return nil
}

// ReleaseLease ends a scan's hold (and sweeps expired leases).
func (db *DB) ReleaseLease(ctx context.Context, s *Source, l *Lease) {
	_, _ = db.w.ExecContext(context.WithoutCancel(ctx), `DELETE FROM `+ScansTable+` WHERE (source = ? AND token = ?) OR expires < ?`,
		s.ID, l.token[:], time.Now().Unix())
}

// Compact deletes log entries up to upTo and raises the floor, so that a
// process whose filter is older knows it must rebuild. It keeps every
// entry a live scan lease holds, every entry the alias table does not
// cover yet (above alias_gen), and always the newest entry: without
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
	var aliasGen int64
	var scanned bool
	err = tx.QueryRowContext(ctx, `SELECT (SELECT min(generation) FROM `+ScansTable+` WHERE source = ?1 AND expires >= ?2),
		alias_gen, scanned FROM `+SourcesTable+` WHERE id = ?1`, s.ID, time.Now().Unix()).Scan(&held, &aliasGen, &scanned)
	if err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	if !scanned {
		return nil
	}
	if held.Valid && uint64(held.Int64) < upTo {
		upTo = uint64(held.Int64)
	}
	upTo = min(upTo, uint64(aliasGen))
	if _, err := tx.ExecContext(ctx, `UPDATE `+SourcesTable+` SET log_floor = max(log_floor, ?) WHERE id = ?`, int64(upTo), s.ID); err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+s.Log+` WHERE seq <= ? AND seq < (SELECT max(seq) FROM `+s.Log+`)`, int64(upTo)); err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+s.Alias+` WHERE NOT EXISTS (SELECT 1 FROM `+s.QTable+` t WHERE t.`+s.QCol+` = stored)`); err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	return nil
}

// Hold records (or renews) that an open index holds the source until
// expires; holder says who, for Detach's refusal.
func (db *DB) Hold(ctx context.Context, s *Source, token [16]byte, holder string, expires time.Time) error {
	if _, err := db.w.ExecContext(ctx, `INSERT OR REPLACE INTO `+HoldersTable+` (source, token, holder, expires) VALUES (?, ?, ?, ?)`,
		s.ID, token[:], holder, expires.Unix()); err != nil {
		return fmt.Errorf("hold source: %w", err)
	}
	return nil
}

// Unhold removes a hold (and sweeps expired ones).
func (db *DB) Unhold(ctx context.Context, s *Source, token [16]byte) {
	_, _ = db.w.ExecContext(context.WithoutCancel(ctx), `DELETE FROM `+HoldersTable+` WHERE (source = ? AND token = ?) OR expires < ?`,
		s.ID, token[:], time.Now().Unix())
}

// holdersOf lists the live holds and scan leases of a source.
func holdersOf(ctx context.Context, q querier, id int64) ([]string, error) {
	var out []string
	now := time.Now().Unix()
	for _, t := range []struct{ table, what string }{{HoldersTable, "holder"}, {ScansTable, "'a rebuild scan'"}} {
		var exists bool
		if err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)`, t.table).Scan(&exists); err != nil {
			return nil, err
		}
		if !exists {
			continue
		}
		rows, err := q.QueryContext(ctx, `SELECT `+t.what+`, expires FROM `+t.table+` WHERE source = ? AND expires >= ?`, id, now)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var who string
			var exp int64
			if err := rows.Scan(&who, &exp); err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, fmt.Sprintf("%s (until %s unless renewed)", who, time.Unix(exp, 0).UTC().Format(time.RFC3339)))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// heldError describes the holders that keep Detach from running.
func heldError(table string, holders []string) error {
	return fmt.Errorf("detach %s: held by %s; close them first, or force it: %w", table, strings.Join(holders, "; "), ErrHeld)
}
