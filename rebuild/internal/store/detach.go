package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Detach removes everything the library added to the database for one
// source, in one transaction: its two triggers, its log and spellings tables,
// its row in syncfilter_sources and its records of snapshots and scans;
// with the last source gone, the shared tables too. For the
// library's own table (table and column empty), syncfilter_fetched goes
// as well. The schema (sqlite_master) is then what it was before the
// source was first attached. A source that is not attached gives
// ErrNotAttached; one that a running scan holds gives ErrHeld (naming
// it) unless force.
func Detach(ctx context.Context, path, table, column string, drv *Driver, busy time.Duration, force bool) error {
	own := table == ""
	if own {
		table, column = OwnTable, OwnColumn
	}
	db, err := Open(ctx, path, Options{Driver: drv, Readers: 1, BusyTimeout: busy})
	if err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	defer db.Close()
	return db.detach(ctx, table, column, own, !force)
}

// detach is Detach on an open database; respectHolds refuses a held source.
func (db *DB) detach(ctx context.Context, table, column string, own, respectHolds bool) (err error) {
	tx, err := db.w.Begin(ctx)
	if err != nil {
		return fmt.Errorf("detach: begin write transaction: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	s := &Source{Table: table, Column: column, Own: own}
	if err := s.findRow(ctx, tx); err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	if !s.Row {
		return fmt.Errorf("detach %s.%s in %s: %w", table, column, db.Path.Given, ErrNotAttached)
	}
	if respectHolds {
		leases, err := leasesOf(ctx, tx, s.ID)
		if err != nil {
			return fmt.Errorf("detach: %w", err)
		}
		if len(leases) > 0 {
			return fmt.Errorf("detach %s: held by %s; let it finish, or force it: %w", table, strings.Join(leases, "; "), ErrHeld)
		}
	}
	stmts := []string{
		`DROP TRIGGER IF EXISTS ` + s.Ins,
		`DROP TRIGGER IF EXISTS ` + s.Upd,
		`DROP TABLE IF EXISTS ` + s.Log,
		`DROP TABLE IF EXISTS ` + s.Spellings,
		`DELETE FROM ` + SourcesTable + ` WHERE id = ` + fmt.Sprint(s.ID),
	}
	for _, t := range []string{SnapshotsTable, ScansTable} {
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)`, t).Scan(&exists); err != nil {
			return fmt.Errorf("detach: %w", err)
		}
		if exists {
			stmts = append(stmts, `DELETE FROM `+t+` WHERE source = `+fmt.Sprint(s.ID))
		}
	}
	if own {
		stmts = append(stmts, `DROP TABLE IF EXISTS `+Quote(OwnTable))
	}
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("detach: %w", err)
		}
	}
	var left int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+SourcesTable).Scan(&left); err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	if left == 0 {
		for _, t := range []string{SourcesTable, SnapshotsTable, ScansTable} {
			if _, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS `+t); err != nil {
				return fmt.Errorf("detach: %w", err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("detach: commit: %w", err)
	}
	return nil
}
