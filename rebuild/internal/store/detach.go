package store

import (
	"context"
	"fmt"
	"strings"
)

// Detach removes everything the library added for one source (table and
// column empty: the library's own table), in one transaction, leaving
// sqlite_master as it was before the source was first attached:
// ErrNotAttached if it is not, ErrHeld while a live scan lease holds it
// unless force.
func (db *DB) Detach(ctx context.Context, table, column string, force bool) error {
	own := table == ""
	if own {
		table, column = OwnTable, OwnColumn
	}
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
