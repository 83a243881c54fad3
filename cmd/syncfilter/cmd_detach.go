package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/snapshot"
)

// detach removes the library's tables, triggers and row for one source
// and, with --snapshot, the snapshot file of that source (only if it is
// one: a file that is not that dataset's snapshot is left alone).
func (a *app) detach(ctx context.Context, args []string) error {
	fs := a.flags("detach")
	db, table, column := sourceFlags(fs)
	snap := fs.String("snapshot", "", "also delete this snapshot `file`, if it is the detached source's")
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
	// Read the snapshot's dataset before the source's record is gone.
	var remove bool
	if *snap != "" {
		ro, err := rebuild.Open(ctx, rebuild.Config{Path: *db, Table: *table, Column: *column, ReadOnly: true})
		if err != nil {
			return err
		}
		ds, attached := ro.DatasetID()
		_ = ro.Close(ctx)
		h, err := snapshot.ReadHeader(*snap)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return fmt.Errorf("leave %s alone: %w", *snap, err)
		case !attached || h.DatasetID != ds:
			return fmt.Errorf("leave %s alone: it is not the snapshot of %s.%s", *snap, *table, *column)
		default:
			remove = true
		}
	}
	if err := rebuild.Detach(ctx, *db, *table, *column); err != nil {
		return err
	}
	if remove {
		if err := os.Remove(*snap); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove snapshot: %w", err)
		}
	}
	fmt.Fprintf(a.stdout, "syncfilter detach: removed the filter's tables and triggers for %s.%s from %s\n", *table, *column, *db)
	return nil
}
