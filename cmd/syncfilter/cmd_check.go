package main

import (
	"bufio"
	"context"
	"fmt"

	"github.com/syncfilter/syncfilter/rebuild"
)

func (a *app) check(ctx context.Context, args []string) error {
	fs := a.flags("check")
	db := fs.String("db", "", "SQLite database `path`")
	table := fs.String("table", "", "source table `name`")
	column := fs.String("column", "", "key column `name`")
	snap := fs.String("snapshot", "", "snapshot `file` to load, verify and catch up (without it, SQLite answers alone)")
	nul := fs.Bool("0", false, "keys on stdin are NUL-separated; so are the output records")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := required(fs, "db", "table", "column"); err != nil {
		return err
	}
	keys, err := a.readKeys(pos, *nul)
	if err != nil {
		return err
	}
	// Read-only: check changes nothing in the database or on disk.
	ix, err := rebuild.Open(ctx, rebuild.Config{
		Path: *db, Table: *table, Column: *column, Snapshot: *snap, ReadOnly: true,
	})
	if err != nil {
		return err
	}
	defer ix.Close(context.WithoutCancel(ctx))
	switch st := ix.Stats(); {
	case !st.Attached:
		fmt.Fprintf(a.stderr, "syncfilter check: no filter attached to %s.%s; answering from SQLite alone\n", *table, *column)
	case *snap != "" && st.SnapshotError != nil:
		fmt.Fprintf(a.stderr, "syncfilter check: snapshot not used, answering from SQLite: %s\n", oneLine(st.SnapshotError.Error()))
	}
	missing, err := ix.Missing(ctx, keys)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(a.stdout)
	next := 0
	for _, k := range keys {
		verdict := "fetched"
		if next < len(missing) && missing[next] == k {
			verdict = "missing"
			next++
		}
		a.answer(w, verdict, k, *nul)
	}
	return w.Flush()
}
