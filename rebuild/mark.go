package rebuild

import (
	"context"
	"database/sql"
	"fmt"
)

// Cover puts keys in the filter before the caller commits them to the
// source in its own transaction, on its own connection:
//
//	err := ix.Cover(ctx, ids...)  // 1. the filter covers them
//	err = tx.Commit()             // 2. only then are they committed
//
// If the commit fails or never happens, the keys stay "maybe" and are
// confirmed absent: a little slower, never wrong. If Cover fails, do not
// commit (or accept that the keys are caught up from the log before any
// answer relies on them).
func (ix *Index) Cover(ctx context.Context, keys ...string) error {
	if err := ix.enter(); err != nil {
		return err
	}
	defer ix.leave()
	canon, err := canonicalAll(keys)
	if err != nil {
		return fmt.Errorf("cover: %w", err)
	}
	if err := ix.cover(ctx, canon); err != nil {
		return fmt.Errorf("cover: %w", err)
	}
	return nil
}

// Update runs fn in a write transaction on the index's own connection.
// Keys passed to mark are in the filter before the transaction commits;
// fn's error rolls it back, and so does a panic in fn, which Update then
// re-panics: the connection is free for the next call either way.
//
// fn must not call the Index (Update, Fetched, Missing, Rebuild, ...):
// Update holds the index's only write connection. Such a call made on
// the goroutine running fn returns ErrNestedCall at once; from another
// goroutine that fn waits for, it would wait for fn, so do not.
func (ix *Index) Update(ctx context.Context, fn func(tx *sql.Tx, mark func(keys ...string) error) error) (err error) {
	if err := ix.enter(); err != nil {
		return err
	}
	defer ix.leave()
	if ix.cfg.ReadOnly {
		return fmt.Errorf("update: %w", ErrReadOnly)
	}
	tx, err := ix.st.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("update: %w", err)
	}
	ix.updater.Store(goid())
	committed := false
	defer func() {
		ix.updater.Store(0)
		if !committed { // an error, or a panic on its way up
			_ = tx.Rollback()
		}
	}()
	mark := func(keys ...string) error {
		canon, err := canonicalAll(keys)
		if err != nil {
			return err
		}
		return ix.cover(ctx, canon)
	}
	if err := fn(tx, mark); err != nil {
		return err
	}
	committed = true // Commit ends the transaction, even when it fails
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("update: commit: %w", err)
	}
	return nil
}

// MarkFetched records keys as fetched in the library's own table
// (Config.Table empty): the filter covers them, then one transaction
// inserts them in canonical form. See Update and Cover for an app's table.
func (ix *Index) MarkFetched(ctx context.Context, keys ...string) error {
	if !ix.st.own {
		return fmt.Errorf("mark fetched in %s: %w", ix.st.table, ErrNotOwnTable)
	}
	canon, err := canonicalAll(keys)
	if err != nil {
		return fmt.Errorf("mark fetched: %w", err)
	}
	return ix.Update(ctx, func(tx *sql.Tx, _ func(...string) error) error {
		if err := ix.cover(ctx, canon); err != nil {
			return fmt.Errorf("mark fetched: %w", err)
		}
		if err := ix.st.insertOwn(ctx, tx, canon); err != nil {
			return fmt.Errorf("mark fetched: %w", err)
		}
		return nil
	})
}
