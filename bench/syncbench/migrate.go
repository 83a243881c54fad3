package syncbench

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The app's migrations, run on its own pool while the library is open.

// AddColumn is an ordinary migration: one ALTER TABLE … ADD COLUMN.
func (a *AppPool) AddColumn(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	if _, err := a.db.ExecContext(ctx, `ALTER TABLE records ADD COLUMN updated_at INTEGER`); err != nil {
		return 0, fmt.Errorf("add column: %w", err)
	}
	return time.Since(start), nil
}

// RebuildTable changes the table in a way ALTER TABLE cannot (body NOT
// NULL, a new NOT NULL column, the key's uniqueness moved from the
// PRIMARY KEY to an index of its own) by SQLite's documented procedure
// (https://sqlite.org/lang_altertable.html#otheralter): in one
// transaction, create the new table, copy the rows, drop the old table,
// rename the new one, recreate the index, check the foreign keys. There
// are none, so steps 1 and 12 (foreign_keys off and back) are left out.
// The library's triggers go with the old table.
func (a *AppPool) RebuildTable(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("rebuild table: %w", err)
	}
	var added bool // AddColumn ran before
	if err := tx.QueryRowContext(ctx, `SELECT count(*) > 0 FROM pragma_table_info('records') WHERE name = 'updated_at'`).Scan(&added); err != nil {
		return 0, errors.Join(fmt.Errorf("rebuild table: %w", err), tx.Rollback())
	}
	updated := "NULL"
	if added {
		updated = "updated_at"
	}
	for _, q := range []string{
		`CREATE TABLE records_new (id TEXT NOT NULL, body TEXT NOT NULL, updated_at INTEGER, rev INTEGER NOT NULL DEFAULT 0)`,
		`INSERT INTO records_new (id, body, updated_at) SELECT id, body, ` + updated + ` FROM records`,
		`DROP TABLE records`,
		`ALTER TABLE records_new RENAME TO records`,
		`CREATE UNIQUE INDEX records_id ON records (id)`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return 0, errors.Join(fmt.Errorf("rebuild table: %s: %w", q, err), tx.Rollback())
		}
	}
	rows, err := tx.QueryContext(ctx, `PRAGMA foreign_key_check`)
	if err != nil {
		return 0, errors.Join(fmt.Errorf("rebuild table: %w", err), tx.Rollback())
	}
	bad := rows.Next()
	if err := errors.Join(rows.Err(), rows.Close()); err != nil || bad {
		return 0, errors.Join(fmt.Errorf("rebuild table: foreign key check failed (%v)", err), tx.Rollback())
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("rebuild table: %w", err)
	}
	return time.Since(start), nil
}
