package rebuild

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Detach removes everything the library added to the database for one
// source, in one transaction: its two triggers, its log and alias tables,
// its row in syncfilter_sources and its records of snapshots and scans;
// with the last source gone, the shared tables syncfilter_sources,
// syncfilter_snapshots and syncfilter_scans too. For the library's own table (table and
// column empty), syncfilter_fetched and the record of fetched keys it
// holds go as well. Afterwards the schema (sqlite_master) is what it was
// before the source was first attached. Names match as SQLite's do,
// case-insensitively. A source that is not attached gives ErrNotAttached
// and changes nothing.
//
// Detach leaves two things alone: the database stays in WAL journal mode
// (run `PRAGMA journal_mode = DELETE` if the app did not use WAL), and a
// snapshot file is not removed (delete it yourself; a later attach gets a
// new dataset id and refuses to replace it without ReplaceForeignFile).
// Close every Index on the source first: an open one would attach it again
// at its next Open, and until then its filter no longer learns of new rows.
func Detach(ctx context.Context, path, table, column string) error {
	return DetachTimeout(ctx, path, table, column, 5*time.Second)
}

// DetachTimeout is Detach waiting at most busy (instead of 5 seconds) for
// a lock that another connection holds on the database.
func DetachTimeout(ctx context.Context, path, table, column string, busy time.Duration) (err error) {
	if (table == "") != (column == "") {
		return fmt.Errorf("detach: table %q and column %q: give both or neither: %w", table, column, ErrBadConfig)
	}
	own := table == ""
	if own {
		table, column = ownTable, ownColumn
	} else {
		if err := checkName("table", table); err != nil {
			return fmt.Errorf("detach: %w", err)
		}
		if err := checkName("column", column); err != nil {
			return fmt.Errorf("detach: %w", err)
		}
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("detach: open database: %w", err)
	}
	db, err := sql.Open("sqlite3", dsn(path, "mode=rw&_txlock=immediate&_busy_timeout="+strconv.FormatInt(busy.Milliseconds(), 10)))
	if err != nil {
		return fmt.Errorf("detach: open database: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	row, found, err := findSource(ctx, tx, table, column)
	if err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	if !found {
		return fmt.Errorf("detach %s.%s in %s: %w", table, column, path, ErrNotAttached)
	}
	var s store
	s.setNames(row.id)
	stmts := []string{
		`DROP TRIGGER IF EXISTS ` + s.insTrigger,
		`DROP TRIGGER IF EXISTS ` + s.updTrigger,
		`DROP TABLE IF EXISTS ` + s.logTable,
		`DROP TABLE IF EXISTS ` + s.aliasTable,
		`DELETE FROM ` + sourcesTable + ` WHERE id = ` + fmt.Sprint(row.id),
	}
	for _, t := range []string{snapshotsTable, scansTable} {
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)`, t).Scan(&exists); err != nil {
			return fmt.Errorf("detach: %w", err)
		}
		if exists {
			stmts = append(stmts, `DELETE FROM `+t+` WHERE source = `+fmt.Sprint(row.id))
		}
	}
	if own {
		stmts = append(stmts, `DROP TABLE IF EXISTS `+quote(ownTable))
	}
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("detach: %w", err)
		}
	}
	var left int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+sourcesTable).Scan(&left); err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	if left == 0 {
		for _, t := range []string{sourcesTable, snapshotsTable, scansTable} {
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
