package store

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"

	"github.com/syncfilter/syncfilter/normalize"
)

// sharedDDL creates the tables every source of a database shares. No
// AUTOINCREMENT: it would create sqlite_sequence, which SQLite never lets
// anyone drop, and Detach must leave the schema as it found it.
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
		positions_key  BLOB,
		lowest_version INTEGER NOT NULL DEFAULT 1,
		compare    TEXT NOT NULL DEFAULT 'nfc/1',
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

// keyColumns are added to a syncfilter_sources created before them: a
// row of then has no key (NULL) and accepts snapshots from version 1.
var keyColumns = []string{
	`ALTER TABLE ` + SourcesTable + ` ADD COLUMN positions_key BLOB`,
	`ALTER TABLE ` + SourcesTable + ` ADD COLUMN lowest_version INTEGER NOT NULL DEFAULT 1`,
}

// compareColumn is added to a syncfilter_sources created before it: a
// row of then compared ids canonically.
const compareColumn = `ALTER TABLE ` + SourcesTable + ` ADD COLUMN compare TEXT NOT NULL DEFAULT 'nfc/1'`

// storedKey is positions_key as the row holds it: the key, and for a
// source that compares ids otherwise than canonically its policy after
// it. Builds that know no other policy than nfc/1 read a key of 32 bytes
// only: they refuse such a row (every call fails) rather than answer it
// canonically, which would take an NFD id for its stored NFC spelling.
func (s *Source) storedKey() []byte {
	if s.Policy == "" || s.Policy == normalize.Policy {
		return s.Key[:]
	}
	return append(s.Key[:len(s.Key):len(s.Key)], s.Policy...)
}

// keyFits reports whether positions_key holds a key as storedKey writes
// it for policy.
func keyFits(key []byte, policy string) bool {
	if policy == normalize.Policy {
		return len(key) == keyLen
	}
	return len(key) == keyLen+len(policy) && string(key[keyLen:]) == policy
}

// keyLen is the length of the key of the positions.
const keyLen = 32

// KeyedVersion is the first snapshot format version that keeps the key of
// the positions out of the file: the lowest a source accepts once it was
// created with its key, or saved one.
const KeyedVersion = 2

// AttachInfo says what an Attach did (neither, when it only gave a row of
// before the key its key).
type AttachInfo struct {
	// Created: this call created the source's row; Undo removes it all.
	Created bool
	// Reattached: the source had a row but lost its triggers or log (a
	// migration): they were made again, its epoch moved on (every filter
	// built before is stale) and its snapshot records were dropped.
	Reattached bool
}

// Attach makes the source logged, in one write transaction that resolves
// it again (another process may have changed the schema or attached it)
// and creates what is missing. A fresh source (Scanned false) has no full
// scan vouching for the rows already there.
func (db *DB) Attach(ctx context.Context, w Want) (s *Source, info AttachInfo, err error) {
	err = db.update(ctx, "attach source", func(tx *Tx) error {
		var err error
		if s, err = Resolve(ctx, tx, w); err != nil || (s.Row && s.Logged && s.Keyed) {
			return err
		}
		return s.attach(ctx, tx, &info)
	})
	if err != nil {
		return nil, info, err
	}
	return s, info, nil
}

// attach creates the shared tables, the source's row (with a random
// dataset id and key) or resets it, and its log, spellings table and
// triggers; a row of before the key gets one.
func (s *Source) attach(ctx context.Context, tx *Tx, info *AttachInfo) error {
	if err := tx.execAll(sharedDDL...); err != nil {
		return err
	}
	have, err := sourceColumns(ctx, tx)
	if err == nil && !have.keyed {
		err = tx.execAll(keyColumns...)
	}
	if err == nil && !have.compare {
		err = tx.exec(compareColumn)
	}
	if err != nil {
		return err
	}
	if s.Row && !s.Keyed {
		if err := s.newKey(tx); err != nil || s.Logged {
			return err
		}
	}
	if s.OwnMissing {
		if err := tx.exec(`CREATE TABLE ` + Quote(OwnTable) + ` (` + Quote(OwnColumn) + ` TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID`); err != nil {
			return err
		}
		s.OwnMissing = false
	}
	if s.Row {
		info.Reattached = true
		err = s.reset(tx)
	} else {
		info.Created = true
		err = s.insertRow(ctx, tx)
	}
	if err == nil {
		err = tx.execAll(
			`CREATE TABLE IF NOT EXISTS `+s.Log+` (seq INTEGER PRIMARY KEY, key TEXT NOT NULL, tag INTEGER NOT NULL)`,
			`CREATE TABLE IF NOT EXISTS `+s.Spellings+` (canon TEXT NOT NULL, stored TEXT NOT NULL, PRIMARY KEY (canon, stored)) WITHOUT ROWID`,
			s.triggerSQL(s.Ins, "INSERT"), s.triggerSQL(s.Upd, "UPDATE OF "+s.QCol))
	}
	if err == nil { // the table's row, which Logged compares (Source.tableRow)
		err = tx.exec(`UPDATE `+SourcesTable+` SET tbl_rowid = (SELECT rowid FROM sqlite_master WHERE type = 'table' AND name = ?) WHERE id = ?`, s.Table, s.ID)
	}
	s.Logged = err == nil
	return err
}

// reset drops the triggers of a source that lost some of its objects.
// Rows written meanwhile are in no log: no filter, snapshot or spellings
// record of before vouches for them, so the epoch moves on.
func (s *Source) reset(tx *Tx) error {
	err := tx.execAll(`DROP TRIGGER IF EXISTS `+s.Ins, `DROP TRIGGER IF EXISTS `+s.Upd)
	if err == nil {
		err = tx.exec(`UPDATE `+SourcesTable+` SET epoch = epoch + 1, scanned = 0 WHERE id = ?`, s.ID)
	}
	if err == nil {
		err = tx.exec(`DELETE FROM `+SnapshotsTable+` WHERE source = ?`, s.ID)
	}
	s.Scanned = false
	return err
}

// newKey gives a row of before the key a new random one: a version 1
// file (whose header holds its own key) never opens the snapshots saved
// with it.
func (s *Source) newKey(tx *Tx) error {
	_, _ = rand.Read(s.Key[:])
	s.Keyed = true
	return tx.exec(`UPDATE `+SourcesTable+` SET positions_key = ? WHERE id = ?`, s.storedKey(), s.ID)
}

// insertRow creates the source's row, with a new random dataset id and
// key; it accepts no snapshot older than KeyedVersion.
func (s *Source) insertRow(ctx context.Context, tx *Tx) error {
	_, _ = rand.Read(s.DatasetID[:])
	_, _ = rand.Read(s.Key[:])
	s.Keyed, s.Lowest = true, KeyedVersion
	res, err := tx.ExecContext(ctx, `INSERT INTO `+SourcesTable+` (tbl, col, dataset_id, positions_key, lowest_version, compare) VALUES (?, ?, ?, ?, ?, ?)`,
		s.Table, s.Column, s.DatasetID[:], s.storedKey(), s.Lowest, s.Policy)
	if err != nil {
		return err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return err
	}
	s.setNames(id)
	s.Row = true
	return tx.QueryRowContext(ctx, `SELECT created_at FROM `+SourcesTable+` WHERE id = ?`, id).Scan(&s.CreatedAt)
}

// Undo removes a source Attach created (AttachInfo.Created) whose first
// scan never completed, leaving the database as it found it.
func (db *DB) Undo(ctx context.Context, s *Source) error {
	return db.detach(context.WithoutCancel(ctx), s.Table, s.Column, s.Own, false)
}

// Detach removes, in one transaction, everything the library added for
// one source (table "": the library's own table), and the shared tables
// with the last one: ErrNotAttached if it is not attached, ErrHeld while a
// live scan lease holds it, unless force.
func (db *DB) Detach(ctx context.Context, table, column string, force bool) error {
	own := table == ""
	if own {
		table, column = OwnTable, OwnColumn
	}
	return db.detach(ctx, table, column, own, !force)
}

func (db *DB) detach(ctx context.Context, table, column string, own, respectHolds bool) error {
	return db.update(ctx, "detach", func(tx *Tx) error {
		s := &Source{Table: table, Column: column, Own: own, plain: plainOf(tx)}
		if err := s.findRow(ctx, tx); err != nil {
			return err
		}
		if !s.Row {
			return fmt.Errorf("%s.%s in %s: %w", table, column, db.Path.Given, ErrNotAttached)
		}
		if respectHolds {
			leases, err := leasesOf(ctx, tx, s.ID)
			if err == nil && len(leases) > 0 {
				err = fmt.Errorf("%s: held by %s; let it finish, or force it: %w", table, strings.Join(leases, "; "), ErrHeld)
			}
			if err != nil {
				return err
			}
		}
		stmts := []string{`DROP TRIGGER IF EXISTS ` + s.Ins, `DROP TRIGGER IF EXISTS ` + s.Upd,
			`DROP TABLE IF EXISTS ` + s.Log, `DROP TABLE IF EXISTS ` + s.Spellings,
			`DELETE FROM ` + SourcesTable + ` WHERE id = ` + fmt.Sprint(s.ID)}
		for _, t := range []string{SnapshotsTable, ScansTable} {
			if ok, err := hasTable(ctx, tx, t); err != nil {
				return err
			} else if ok {
				stmts = append(stmts, `DELETE FROM `+t+` WHERE source = `+fmt.Sprint(s.ID))
			}
		}
		if own {
			stmts = append(stmts, `DROP TABLE IF EXISTS `+Quote(OwnTable))
		}
		var left int
		err := tx.execAll(stmts...)
		if err == nil {
			err = tx.QueryRowContext(ctx, `SELECT count(*) FROM `+SourcesTable).Scan(&left)
		}
		if err == nil && left == 0 {
			err = tx.execAll(`DROP TABLE IF EXISTS `+SourcesTable, `DROP TABLE IF EXISTS `+SnapshotsTable, `DROP TABLE IF EXISTS `+ScansTable)
		}
		return err
	})
}
