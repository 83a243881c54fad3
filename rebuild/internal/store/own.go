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
	st, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO `+s.QTable+` (`+s.QCol+`) VALUES (?)`)
	if err != nil {
		return fmt.Errorf("mark fetched: %w", err)
	}
	defer st.Close()
	for _, k := range keys {
		if _, err := st.ExecContext(ctx, k); err != nil {
			return fmt.Errorf("mark fetched: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("mark fetched: %w", err)
	}
	return nil
}
