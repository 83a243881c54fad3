package store

import (
	"context"
	"crypto/rand"
	"fmt"
)

// sharedDDL creates the tables every source of a database shares. No
// AUTOINCREMENT anywhere: it would create sqlite_sequence, a table SQLite
// never lets anyone drop, and Detach must leave the schema as it found it.
var sharedDDL = []string{
	`CREATE TABLE IF NOT EXISTS ` + SourcesTable + ` (
		id         INTEGER PRIMARY KEY,
		tbl        TEXT NOT NULL,
		col        TEXT NOT NULL,
		dataset_id BLOB NOT NULL,
		log_floor  INTEGER NOT NULL DEFAULT 0,
		scanned    INTEGER NOT NULL DEFAULT 0,
		created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
		epoch      INTEGER NOT NULL DEFAULT 0,
		spellings_gen  INTEGER NOT NULL DEFAULT 0,
		snapshot   TEXT,
		tbl_rowid  INTEGER NOT NULL DEFAULT 0,
		UNIQUE (tbl, col))`,
	`CREATE TABLE IF NOT EXISTS ` + SnapshotsTable + ` (
		source     INTEGER NOT NULL,
		checksum   BLOB NOT NULL,
		generation INTEGER NOT NULL,
		m          INTEGER NOT NULL,
		saved_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
		PRIMARY KEY (source, checksum)) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS ` + ScansTable + ` (
		source     INTEGER NOT NULL,
		token      BLOB NOT NULL,
		generation INTEGER NOT NULL,
		expires    INTEGER NOT NULL,
		PRIMARY KEY (source, token)) WITHOUT ROWID`,
}

// AttachInfo says what an Attach did.
type AttachInfo struct {
	// Created: this call created the source's row (its first attach).
	// Undo removes everything it added.
	Created bool
	// Reattached: the source had a row, but its triggers or log were not
	// in place (the app's migration dropped or moved them): they were
	// made again, the source's epoch moved on (every filter built before
	// is stale, in every process) and its snapshot records were dropped.
	Reattached bool
}

// Attach makes the source logged, in one write transaction: it resolves
// the source again inside the transaction (another process may have
// changed the schema or attached it meanwhile), creates the shared tables,
// the source's row with a new
// random dataset id the first time, its log and spellings tables and its
// triggers. A failure rolls everything back. Fresh (Source.Scanned false)
// means no full scan vouches for the rows already there.
func (db *DB) Attach(ctx context.Context, table, column string, allowUnindexed bool) (s *Source, info AttachInfo, err error) {
	if db.w == nil {
		return nil, info, fmt.Errorf("attach source: database opened read-only")
	}
	tx, err := db.w.Begin(ctx)
	if err != nil {
		return nil, info, fmt.Errorf("attach source: begin write transaction: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	s, err = Resolve(ctx, tx, table, column, allowUnindexed)
	if err != nil {
		return nil, info, err
	}
	if s.Row && s.Logged {
		if err := tx.Commit(); err != nil { // nothing written
			return nil, info, fmt.Errorf("attach source: %w", err)
		}
		return s, info, nil
	}
	exec := func(q string, args ...any) error {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("attach source: %w", err)
		}
		return nil
	}
	for _, q := range sharedDDL {
		if err := exec(q); err != nil {
			return nil, info, err
		}
	}
	if s.OwnMissing {
		if err := exec(`CREATE TABLE ` + Quote(OwnTable) + ` (` + Quote(OwnColumn) + ` TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID`); err != nil {
			return nil, info, err
		}
		s.OwnMissing = false
	}
	if s.Row {
		info.Reattached = true
		if err := exec(`DROP TRIGGER IF EXISTS ` + s.Ins); err != nil {
			return nil, info, err
		}
		if err := exec(`DROP TRIGGER IF EXISTS ` + s.Upd); err != nil {
			return nil, info, err
		}
		// Rows written while the triggers were gone are in no log: no
		// filter, snapshot or spellings record of before vouches for them.
		if err := exec(`UPDATE `+SourcesTable+` SET epoch = epoch + 1, scanned = 0 WHERE id = ?`, s.ID); err != nil {
			return nil, info, err
		}
		if err := exec(`DELETE FROM `+SnapshotsTable+` WHERE source = ?`, s.ID); err != nil {
			return nil, info, err
		}
		s.Scanned = false
	} else {
		info.Created = true
		_, _ = rand.Read(s.DatasetID[:])
		res, err := tx.ExecContext(ctx, `INSERT INTO `+SourcesTable+` (tbl, col, dataset_id) VALUES (?, ?, ?)`, s.Table, s.Column, s.DatasetID[:])
		if err != nil {
			return nil, info, fmt.Errorf("attach source: %w", err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return nil, info, fmt.Errorf("attach source: %w", err)
		}
		s.setNames(id)
		if err := tx.QueryRowContext(ctx, `SELECT created_at FROM `+SourcesTable+` WHERE id = ?`, id).Scan(&s.CreatedAt); err != nil {
			return nil, info, fmt.Errorf("attach source: %w", err)
		}
		s.Row = true
	}
	if err := exec(`CREATE TABLE IF NOT EXISTS ` + s.Log + ` (seq INTEGER PRIMARY KEY, key TEXT NOT NULL, tag INTEGER NOT NULL)`); err != nil {
		return nil, info, err
	}
	if err := exec(`CREATE TABLE IF NOT EXISTS ` + s.Spellings + ` (canon TEXT NOT NULL, stored TEXT NOT NULL, PRIMARY KEY (canon, stored)) WITHOUT ROWID`); err != nil {
		return nil, info, err
	}
	if err := exec(s.triggerSQL(s.Ins, "INSERT")); err != nil {
		return nil, info, err
	}
	if err := exec(s.triggerSQL(s.Upd, "UPDATE OF "+s.QCol)); err != nil {
		return nil, info, err
	}
	// The table the triggers log (see Source.tableRow), created above if
	// it is the library's own.
	if err := exec(`UPDATE `+SourcesTable+` SET tbl_rowid = (SELECT rowid FROM sqlite_master WHERE type = 'table' AND name = ?) WHERE id = ?`, s.Table, s.ID); err != nil {
		return nil, info, err
	}
	if err := tx.Commit(); err != nil {
		return nil, info, fmt.Errorf("attach source: commit: %w", err)
	}
	s.Logged = true
	return s, info, nil
}

// Undo removes a source that Attach created (AttachInfo.Created) and that
// never became usable: a first attach interrupted before its scan
// completed leaves the database as it found it.
func (db *DB) Undo(ctx context.Context, s *Source) error {
	return db.detach(context.WithoutCancel(ctx), s.Table, s.Column, s.Own, false)
}
