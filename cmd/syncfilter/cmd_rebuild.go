package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/syncfilter/syncfilter/rebuild"
)

// summary is the JSON form of `rebuild --json`.
type summary struct {
	Snapshot   string  `json:"snapshot"`
	Rows       int64   `json:"rows"`
	Generation uint64  `json:"generation"`
	M          uint64  `json:"m"`
	K          uint32  `json:"k"`
	Capacity   uint64  `json:"capacity"`
	FPR        float64 `json:"fpr"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
}

func (a *app) rebuild(ctx context.Context, args []string) error {
	fs := a.flags("rebuild")
	db := fs.String("db", "", "SQLite database `path`")
	table := fs.String("table", "", "source table `name`")
	column := fs.String("column", "", "key column `name`")
	out := fs.String("out", "", "snapshot `file` to replace atomically")
	fpr := 0.01
	fs.Var(fraction{&fpr}, "fpr", "target false-positive `rate`, in (0, 1)")
	capacity := fs.Uint64("capacity", 0, "size for at least `N` keys (default: rows × headroom)")
	headroom := fs.Float64("headroom", 2, "multiply the row count by `H` (at least 1) when sizing")
	asJSON := fs.Bool("json", false, "print the summary as JSON on stdout")
	force := fs.Bool("force", false, "replace --out even if it is not a snapshot, or is another dataset's (never the database)")
	unindexed := fs.Bool("allow-unindexed", false, "accept a key column without an index (every confirmation scans the table)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := exactly(pos, 0, "no arguments besides flags"); err != nil {
		return err
	}
	if err := required(fs, "db", "table", "column", "out"); err != nil {
		return err
	}
	if !(*headroom >= 1) {
		return usagef("invalid value %v for flag --headroom: want at least 1", *headroom)
	}
	p := newProgress(a.stderr, a.terminal)
	rep, err := rebuild.BuildSnapshot(ctx, rebuild.Config{
		Path: *db, Table: *table, Column: *column, Snapshot: *out,
		FPR: fpr, Capacity: *capacity, Headroom: *headroom,
		ReplaceForeignFile: *force, AllowUnindexed: *unindexed,
		Progress: p.update, ProgressEvery: 10_000,
	})
	p.finish()
	if err != nil {
		return err
	}
	sum := summary{Snapshot: rep.Snapshot, Rows: rep.Rows, Generation: rep.Generation, M: rep.M, K: rep.K,
		Capacity: rep.Capacity, FPR: fpr, Bytes: rep.Bytes, Seconds: rep.Took.Seconds()}
	if *asJSON {
		return json.NewEncoder(a.stdout).Encode(sum)
	}
	fmt.Fprintf(a.stdout, "syncfilter rebuild: wrote %s: %d rows, generation %d, m = %d, k = %d, sized for %d at %g, %s, in %s\n",
		sum.Snapshot, sum.Rows, sum.Generation, sum.M, sum.K, sum.Capacity, fpr, size(uint64(sum.Bytes)), rep.Took.Round(time.Millisecond))
	return nil
}
