package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/syncfilter/syncfilter/internal/fsafe"
	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/snapshot"
)

// detach removes the library's tables, triggers and row for one source
// and, with --snapshot, the snapshot file of that source (only if it is
// one: a file that is not that dataset's snapshot is left alone). A
// symbolic link at --snapshot is judged by the file it names, which is
// the file removed; the link, the app's, stays.
func (a *app) detach(ctx context.Context, args []string) error {
	fs := a.flags("detach")
	db, table, column := sourceFlags(fs)
	snap := fs.String("snapshot", "", "also delete this snapshot `file`, if it is the detached source's")
	busy := 5 * time.Second
	fs.Var(duration{&busy}, "busy-timeout", "how long SQLite waits for a lock another connection (the app) holds, a duration `D` such as 30s")
	force := fs.Bool("force", false, "detach even while an app's index or a rebuild holds the source (they then answer from SQLite)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := exactly(pos, 0, "no arguments besides flags"); err != nil {
		return err
	}
	if err := required(fs, "db", "table", "column"); err != nil {
		return err
	}
	if err := checkDB(*db); err != nil {
		return err
	}
	a.opens(*db, busy)
	// Read the snapshot's dataset before the source's record is gone.
	var remove *fsafe.Target
	if *snap != "" {
		if remove, err = a.detachTarget(ctx, *db, *table, *column, *snap, busy); err != nil {
			return err
		}
	}
	if err := rebuild.DetachWith(ctx, *db, *table, *column, rebuild.DetachOptions{BusyTimeout: busy, Force: *force}); err != nil {
		if errors.Is(err, rebuild.ErrHeld) {
			return fmt.Errorf("%w (close the app's index first, or run again with --force)", err)
		}
		return err
	}
	fmt.Fprintf(a.stdout, "syncfilter detach: removed the filter's tables and triggers for %s.%s from %s\n", *table, *column, *db)
	if remove != nil {
		// Only the very file that was checked: not one put there since.
		if info, err := os.Lstat(remove.File); err == nil && os.SameFile(info, remove.Info) {
			if err := os.Remove(remove.File); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove snapshot: %w", err)
			}
			if remove.Link {
				fmt.Fprintf(a.stdout, "syncfilter detach: removed the snapshot %s (the file the link %s names; the link stays)\n", remove.File, remove.Path)
			} else {
				fmt.Fprintf(a.stdout, "syncfilter detach: removed the snapshot %s\n", remove.File)
			}
		}
	}
	return nil
}

// detachTarget returns the snapshot file detach may remove afterwards (nil:
// none there), or refuses: a file that is not a regular file, one of the
// database's files, or not the snapshot of the source being detached.
func (a *app) detachTarget(ctx context.Context, db, table, column, snap string, busy time.Duration) (*fsafe.Target, error) {
	ro, err := rebuild.Open(ctx, rebuild.Config{Path: db, Table: table, Column: column, ReadOnly: true, BusyTimeout: busy})
	if err != nil {
		return nil, explainReadOnly(db, err)
	}
	ds, attached := ro.DatasetID()
	_ = ro.Close(ctx)
	t, err := fsafe.CheckWrite(snap, fsafe.DatabaseFiles(db)...)
	if err != nil {
		return nil, fmt.Errorf("leave %s alone: %w", snap, err)
	}
	if t.Info == nil {
		return nil, nil
	}
	h, err := snapshot.ReadHeader(t.File)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("leave %s alone: %w", snap, err)
	case !attached || h.DatasetID != ds:
		return nil, fmt.Errorf("leave %s alone: it is not the snapshot of %s.%s in %s (it is dataset %x's)", snap, table, column, db, h.DatasetID)
	}
	return &t, nil
}
