package store

import (
	"context"
	"fmt"
)

// InsertOwn inserts canonical keys into the library's own table, in one
// transaction on the writer.
func (db *DB) InsertOwn(ctx context.Context, s *Source, keys []string) error {
	if db.w == nil {
		return fmt.Errorf("mark fetched: database opened read-only")
	}
	tx, err := db.w.Begin(ctx)
	if err != nil {
		return fmt.Errorf("mark fetched: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := tx.execEach(ctx, `INSERT OR IGNORE INTO `+s.QTable+` (`+s.QCol+`) VALUES (?)`, len(keys),
		func(i int) []any { return []any{keys[i]} }); err != nil {
		return fmt.Errorf("mark fetched: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("mark fetched: %w", err)
	}
	return nil
}
