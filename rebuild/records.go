package rebuild

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"time"
)

// This file holds the store's records of snapshots and scans, two tables
// shared by every source of a database:
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

const (
	snapshotsTable = "syncfilter_snapshots"
	scansTable     = "syncfilter_scans"

	// keepRecords is how many snapshot records a source keeps: the newest
	// saves of every process (app instances, the cron job) stay loadable.
	keepRecords = 16

	// leaseTerm is how long a scan's lease holds back compaction unless
	// renewed; a crashed process's lease expires after it.
	leaseTerm = 10 * time.Minute
)

// recordsDDL creates the two tables (in attach's transaction).
var recordsDDL = []string{
	`CREATE TABLE IF NOT EXISTS ` + snapshotsTable + ` (
		source     INTEGER NOT NULL,
		checksum   BLOB NOT NULL,
		generation INTEGER NOT NULL,
		m          INTEGER NOT NULL,
		saved_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
		PRIMARY KEY (source, checksum)) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS ` + scansTable + ` (
		source     INTEGER NOT NULL,
		token      BLOB NOT NULL,
		generation INTEGER NOT NULL,
		expires    INTEGER NOT NULL,
		PRIMARY KEY (source, token)) WITHOUT ROWID`,
}

// recordSnapshot notes, in one transaction, that a snapshot with this
// checksum covering generation gen with m bits is being saved, and keeps
// only the newest keepRecords records. A generation the log has not
// reached is refused: no such state of this database exists.
func (s *store) recordSnapshot(ctx context.Context, sum [32]byte, gen, m uint64) (err error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record snapshot: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	var head int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM `+s.logTable).Scan(&head); err != nil {
		return fmt.Errorf("record snapshot: %w", err)
	}
	if gen > uint64(head) {
		return fmt.Errorf("record snapshot: generation %d ahead of the log's %d", gen, head)
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO `+snapshotsTable+` (source, checksum, generation, m) VALUES (?, ?, ?, ?)`,
		s.id, sum[:], int64(gen), int64(m)); err != nil {
		return fmt.Errorf("record snapshot: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+snapshotsTable+` WHERE source = ?1 AND checksum NOT IN
		(SELECT checksum FROM `+snapshotsTable+` WHERE source = ?1 ORDER BY saved_at DESC, generation DESC LIMIT ?2)`,
		s.id, keepRecords); err != nil {
		return fmt.Errorf("record snapshot: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record snapshot: %w", err)
	}
	return nil
}

// vouched reports whether the database recorded saving a snapshot with
// this checksum, generation and size for the source.
func (s *store) vouched(ctx context.Context, sum [32]byte, gen, m uint64) (bool, error) {
	var ok bool
	err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)`, snapshotsTable).Scan(&ok)
	if err != nil || !ok { // a database attached by an older version: no record vouches
		return false, err
	}
	err = s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+snapshotsTable+`
		WHERE source = ? AND checksum = ? AND generation = ? AND m = ?)`, s.id, sum[:], int64(gen), int64(m)).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("check snapshot record: %w", err)
	}
	return ok, nil
}

// countRows counts the source's keys.
func (s *store) countRows(ctx context.Context) (int64, error) {
	var n int64
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM `+s.qTable+` WHERE `+s.qCol+` IS NOT NULL`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count rows: %w", err)
	}
	return n, nil
}

// countAll counts the source's rows, NULL ids included: the bare
// count(*) that SQLite answers from the smallest b-tree's page headers
// (a WHERE would make it read every entry).
func (s *store) countAll(ctx context.Context) (int64, error) {
	var n int64
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM `+s.qTable).Scan(&n); err != nil {
		return 0, fmt.Errorf("count rows: %w", err)
	}
	return n, nil
}

// lease is a scan's hold on the log: compaction keeps every entry after
// its generation until it is released or expires.
type lease struct {
	token   [16]byte
	renewed time.Time
}

// takeLease registers a scan about to start, at the log's current head:
// the scan's own generation, read later, is at least that.
func (s *store) takeLease(ctx context.Context) (*lease, error) {
	l := &lease{renewed: time.Now()}
	_, _ = rand.Read(l.token[:])
	_, err := s.w.ExecContext(ctx, `INSERT INTO `+scansTable+` (source, token, generation, expires)
		VALUES (?, ?, (SELECT coalesce(max(seq), 0) FROM `+s.logTable+`), ?)`,
		s.id, l.token[:], time.Now().Add(leaseTerm).Unix())
	if err != nil {
		return nil, fmt.Errorf("take scan lease: %w", err)
	}
	return l, nil
}

// renewLease extends a lease held longer than a tenth of its term.
func (s *store) renewLease(ctx context.Context, l *lease) error {
	if time.Since(l.renewed) < leaseTerm/10 {
		return nil
	}
	l.renewed = time.Now()
	if _, err := s.w.ExecContext(ctx, `UPDATE `+scansTable+` SET expires = ? WHERE source = ? AND token = ?`,
		time.Now().Add(leaseTerm).Unix(), s.id, l.token[:]); err != nil {
		return fmt.Errorf("renew scan lease: %w", err)
	}
	return nil
}

// releaseLease ends a scan's hold (and sweeps expired leases).
func (s *store) releaseLease(ctx context.Context, l *lease) {
	_, _ = s.w.ExecContext(context.WithoutCancel(ctx), `DELETE FROM `+scansTable+` WHERE (source = ? AND token = ?) OR expires < ?`,
		s.id, l.token[:], time.Now().Unix())
}

// leaseFloor returns the lowest generation a live lease holds, or max
// if none; q is compaction's transaction.
func (s *store) leaseFloor(ctx context.Context, q querier, upTo uint64) (uint64, error) {
	var held sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT min(generation) FROM `+scansTable+` WHERE source = ? AND expires >= ?`,
		s.id, time.Now().Unix()).Scan(&held); err != nil {
		return 0, fmt.Errorf("read scan leases: %w", err)
	}
	if held.Valid && uint64(held.Int64) < upTo {
		return uint64(held.Int64), nil
	}
	return upTo, nil
}
