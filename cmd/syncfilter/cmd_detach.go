package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/syncfilter/syncfilter/internal/fsafe"
	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/rebuild/ops"
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
	force := fs.Bool("force", false, "detach even while a rebuild's scan holds a lease on the source (check that its process is gone); an app with the source open then answers from SQLite")
	all := fs.Bool("all", false, "detach every source the database lists (their snapshot files are left in place); instead of --table, --column and --snapshot")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := exactly(pos, 0, "no arguments besides flags"); err != nil {
		return err
	}
	if err := allOrOne(fs, *all, []string{"table", "column", "snapshot"}, []string{"db", "table", "column"},
		"detaches every source and leaves their snapshot files", "to detach every source"); err != nil {
		return err
	}
	if err := checkDB(*db); err != nil {
		return err
	}
	a.opens(*db, busy)
	if *all {
		return a.detachAll(ctx, a.dbConfig(rebuild.DBConfig{Path: *db, BusyTimeout: busy}), ops.DetachOptions{Force: *force})
	}
	// Read the snapshot's dataset before the source's record is gone.
	var remove *fsafe.Target
	if *snap != "" {
		if remove, err = a.detachTarget(ctx, *db, *table, *column, *snap, busy); err != nil {
			return err
		}
	}
	if err := ops.Detach(ctx, a.dbConfig(rebuild.DBConfig{Path: *db, BusyTimeout: busy}), *table, *column, ops.DetachOptions{Force: *force}); err != nil {
		if errors.Is(err, ops.ErrHeld) {
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

// detachAll detaches every source the database lists, one transaction
// each. A source held by an open index (ErrHeld, without --force) or
// failing otherwise fails alone; the others are detached, and the exit
// status says whether any failed. Snapshot files are left in place: the
// paths the database recorded are printed, for the operator to delete
// (detach --table --column --snapshot removes one, checked).
func (a *app) detachAll(ctx context.Context, db rebuild.DBConfig, opts ops.DetachOptions) error {
	list, err := ops.Sources(ctx, db)
	if err != nil {
		return explainReadOnly(db.Path, err)
	}
	if len(list) == 0 {
		fmt.Fprintf(a.stdout, "syncfilter detach: no source is attached in %s: nothing to detach\n", db.Path)
		return nil
	}
	var bad []string
	for _, src := range list {
		k := keyOf(src.Table, src.Column)
		name := k.table + "." + k.column
		err := ops.Detach(ctx, db, src.Table, src.Column, opts)
		switch {
		case errors.Is(err, context.Canceled):
			return err
		case errors.Is(err, ops.ErrNotAttached):
			fmt.Fprintf(a.stdout, "syncfilter detach: %s was detached already\n", name)
			continue
		case errors.Is(err, ops.ErrHeld):
			a.log.printf("syncfilter detach: %s: %s (let the rebuild finish first, or run again with --force)", name, oneLine(err.Error()))
			bad = append(bad, name)
			continue
		case err != nil:
			msg := oneLine(err.Error())
			a.log.printf("syncfilter detach: %s: %s%s", name, msg, a.lockHint("detach", err, msg))
			bad = append(bad, name)
			continue
		}
		line := fmt.Sprintf("syncfilter detach: removed the filter's tables and triggers for %s from %s", name, db.Path)
		if src.Snapshot != "" {
			line += fmt.Sprintf("; its snapshot %s is left in place (delete it if the app no longer opens the source)", src.Snapshot)
		}
		fmt.Fprintln(a.stdout, line)
	}
	if len(bad) > 0 {
		return &exitError{code: exitFailure, msg: fmt.Sprintf("%d of %d sources not detached: %s", len(bad), len(list), strings.Join(bad, ", "))}
	}
	return nil
}

// detachTarget returns the snapshot file detach may remove afterwards (nil:
// none there), or refuses: a file that is not a regular file, one of the
// database's files, or not the snapshot of the source being detached.
func (a *app) detachTarget(ctx context.Context, db, table, column, snap string, busy time.Duration) (*fsafe.Target, error) {
	ds, attached, err := ops.DatasetID(ctx, a.dbConfig(rebuild.DBConfig{Path: db, ReadOnly: true, BusyTimeout: busy}), table, column)
	if err != nil {
		return nil, explainReadOnly(db, err)
	}
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
