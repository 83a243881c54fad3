package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/syncfilter/syncfilter/internal/fsafe"
	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/rebuild/ops"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// summary is the JSON form of `rebuild --json`. The names are a contract.
type summary struct {
	Table        string  `json:"table"`  // as SQLite names it (the library's own table: syncfilter_fetched)
	Column       string  `json:"column"` //
	Snapshot     string  `json:"snapshot"`
	Rows         int64   `json:"rows"`
	Keys         int64   `json:"keys"`
	Skipped      int64   `json:"skipped"`
	SkippedText  int64   `json:"skipped_invalid"`
	SkippedBlob  int64   `json:"skipped_blob"`
	SkippedNull  int64   `json:"skipped_null"`
	Generation   uint64  `json:"generation"`
	M            uint64  `json:"m"`
	K            uint32  `json:"k"`
	Capacity     uint64  `json:"capacity"`
	FPR          float64 `json:"fpr"`
	EstimatedFPR float64 `json:"estimated_fpr"`
	Bytes        int64   `json:"bytes"`
	Seconds      float64 `json:"seconds"`
	File         string  `json:"file,omitempty"`  // the file written, when snapshot is a symbolic link to it
	Mode         string  `json:"mode"`            // its permission, octal
	Owner        string  `json:"owner,omitempty"` // its owner and group, user:group

	took time.Duration // Seconds, for the text line
}

// rebuildOpts are the settings of a rebuild that apply to every source
// it rebuilds.
type rebuildOpts struct {
	db        string
	fpr       float64
	capacity  uint64
	headroom  float64
	busy      time.Duration
	retain    uint64
	mode      uint32 // the snapshots' permission
	force     bool
	unindexed bool
	asJSON    bool
	every     time.Duration // progress lines off a terminal
	own       owner
	compare   syncfilter.Compare
}

func (a *app) rebuild(ctx context.Context, args []string) error {
	fs := a.flags("rebuild")
	db, table, column := sourceFlags(fs)
	compare := compareFlag(fs)
	out := fs.String("out", "", "snapshot `file` to replace atomically (a symbolic link: the file it names is replaced, the link stays)")
	all := fs.Bool("all", false, "rebuild every source the database lists, each into the snapshot file its last save recorded (or, with none recorded, beside the database, named as ops.DefaultSnapshot names it); instead of --table, --column and --out")
	outDir := fs.String("out-dir", "", "with --all: the `directory` for the snapshots of sources with none recorded (default: the database's)")
	o := rebuildOpts{fpr: 0.01, headroom: 2, busy: 5 * time.Second, retain: 100_000, every: 5 * time.Second}
	fs.Var(fraction{&o.fpr}, "fpr", "target false-positive `rate`, in (0, 1)")
	fs.Var(count{&o.capacity, syncfilter.MaxBits}, "capacity", "size for at least `N` keys (default: rows × headroom; not with --all)")
	fs.Var(bounded{&o.headroom, 1, 1000}, "headroom", "multiply the row count by `H`, from 1 to 1000, when sizing")
	fs.BoolVar(&o.asJSON, "json", false, "print the summary as JSON on stdout (with --all: a list, one object per source)")
	fs.BoolVar(&o.force, "force", false, "replace --out or --metrics-file even if it is not syncfilter's, or is another dataset's snapshot (never the database; with --all, only another dataset's snapshot, never a file that is not a snapshot)")
	fs.BoolVar(&o.unindexed, "allow-unindexed", false, "accept a key column without an index (every confirmation scans the table)")
	fs.Var(duration{&o.busy}, "busy-timeout", "how long SQLite waits for a lock another connection (the app) holds, a duration `D` such as 30s")
	fs.Var(count{&o.retain, 1 << 40}, "log-retain", "log entries to keep behind the snapshot for apps with older filters, `N`")
	fs.Var(fileMode{&o.mode}, "mode", "permission of the snapshot file, octal `MODE` (default: 0600, plus read for group and others where they may read the database)")
	ownerFlag := fs.String("owner", "", "give the snapshot to `user` (name or id; default: the database file's owner; only root may give it to another user)")
	groupFlag := fs.String("group", "", "give the snapshot to `group` (name or id; default: the database file's group)")
	fs.Var(duration{&o.every}, "progress-every", "off a terminal, log the scan's progress every `D` (0: never)")
	metrics := fs.String("metrics-file", "", "write Prometheus textfile-collector metrics to `file` (atomically), on success and on failure; one series per source, labelled table and column")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := exactly(pos, 0, "no arguments besides flags"); err != nil {
		return err
	}
	if !*all && *outDir != "" {
		return usagef("--out-dir goes with --all; name one source's snapshot with --out")
	}
	if err := allOrOne(fs, *all, []string{"table", "column", "out", "capacity", "compare"}, []string{"db", "table", "column", "out"},
		"rebuilds every source, each into its own snapshot", "to rebuild every source the database lists"); err != nil {
		return err
	}
	if o.capacity > 0 {
		if _, err := syncfilter.NewParams(o.capacity, o.fpr); err != nil {
			return usagef("invalid value %d for flag --capacity at --fpr %g: %v", o.capacity, o.fpr, err)
		}
	}
	// Every path the run writes is checked before the scan: the database,
	// --out (the library checks it again before it attaches anything),
	// the metrics file, and who may own the snapshot.
	if info, err := os.Stat(*out); err == nil && info.IsDir() {
		return usagef("--out %s is a directory: name a file", *out)
	}
	if err := checkDB(*db); err != nil {
		return err
	}
	o.db, o.compare = *db, *compare
	a.opens(*db, o.busy)
	if o.mode == 0 { // not given
		o.mode = defaultMode(*db)
	}
	if o.own, err = resolveOwner(*db, *ownerFlag, *groupFlag); err != nil {
		return err
	}
	if *all {
		return a.rebuildAll(ctx, o, *outDir, *metrics)
	}
	start := time.Now()
	var m *metricsFile
	if *metrics != "" {
		if m, err = openMetrics(*metrics, *db, o.force); err != nil {
			return err
		}
		if err := m.notSnapshot(*out, "--out"); err != nil {
			return err
		}
	}
	// The run's metrics are written once: by the run, or, if the process
	// ends without waiting for it (see main), by the abort.
	key := keyOf(*table, *column)
	var once sync.Once
	var metricsErr error
	final := func(r runOutcome) {
		if m == nil {
			return
		}
		once.Do(func() { metricsErr = m.write([]sourceRun{{key, r}}, true) })
	}
	a.setAbort(func() { final(runOutcome{end: time.Now(), took: time.Since(start), reason: reasonInterrupted}) })
	defer a.setAbort(nil)

	for _, n := range o.own.notes {
		a.log.printf("syncfilter rebuild: %s", n)
	}
	sum, err := a.buildOne(ctx, o, *table, *column, *out, "")
	if err != nil {
		final(runOutcome{end: time.Now(), took: time.Since(start), reason: failureReason(err)})
		if metricsErr != nil {
			a.log.printf("syncfilter rebuild: %v", metricsErr)
		}
		return err
	}
	final(runOutcome{end: time.Now(), took: sum.took, sum: &sum})
	var failed error
	if metricsErr != nil {
		// The snapshot is in place: say so in the summary, then fail.
		a.log.printf("syncfilter rebuild: %v (the snapshot was written)", metricsErr)
		failed = &exitError{code: exitFailure}
	}
	a.log.close()
	if o.asJSON {
		if err := json.NewEncoder(a.stdout).Encode(sum); err != nil {
			return err
		}
		return failed
	}
	if err := a.printLine(summaryLine(sum, "")); err != nil {
		return err
	}
	return failed
}

// buildOne rebuilds the snapshot out of one source (table and column as
// the library names them: "" and "" for its own table) and gives the
// file to its owner. label names the source in progress lines ("": the
// only one).
func (a *app) buildOne(ctx context.Context, o rebuildOpts, table, column, out, label string) (summary, error) {
	p := newProgress(a.log, a.width)
	p.label = label
	if !a.terminal {
		p.every = o.every
	}
	var progressFn func(done, total int64)
	if a.terminal || o.every > 0 {
		progressFn = p.update
	}
	rep, err := ops.BuildSnapshot(ctx, a.dbConfig(rebuild.DBConfig{Path: o.db, BusyTimeout: o.busy}), rebuild.Source{
		Table: table, Column: column, Snapshot: out,
		FPR: o.fpr, Capacity: o.capacity, Headroom: o.headroom, LogRetain: o.retain,
		SnapshotMode: os.FileMode(o.mode), ReplaceForeignFile: o.force, AllowUnindexed: o.unindexed,
		Compare: o.compare, Progress: progressFn, ProgressEvery: 10_000,
	})
	p.finish()
	if err != nil {
		return summary{}, err
	}
	file := rep.Snapshot // the file written: a link's target
	if li, err := os.Lstat(file); err == nil && li.Mode()&os.ModeSymlink != 0 {
		if r, err := fsafe.Resolve(file); err == nil {
			file = r
		}
	}
	if err := o.own.apply(file); err != nil {
		a.log.printf("syncfilter rebuild: could not give %s to its owner: %v (it stays %s)", file, err, ownerString(file))
	}
	c := rep.Counts
	k := keyOf(table, column)
	sum := summary{Table: k.table, Column: k.column, Snapshot: rep.Snapshot, Rows: c.Rows, Keys: c.Keys,
		Skipped: c.SkippedText + c.SkippedBlob + c.SkippedNull, SkippedText: c.SkippedText, SkippedBlob: c.SkippedBlob, SkippedNull: c.SkippedNull,
		Generation: rep.Generation, M: rep.M, K: rep.K, Capacity: rep.Capacity, FPR: o.fpr, EstimatedFPR: rep.EstimatedFPR,
		Bytes: rep.Bytes, Seconds: rep.Took.Seconds(), Mode: fmt.Sprintf("%04o", o.mode), Owner: ownerString(file), took: rep.Took}
	if file != rep.Snapshot {
		sum.File = file
	}
	return sum, nil
}

// summaryLine is a rebuilt snapshot's line of the run's output; label
// names the source ("": the only one).
func summaryLine(sum summary, label string) string {
	where := sum.Snapshot
	if sum.File != "" {
		where += " (-> " + sum.File + ")"
	}
	if label != "" {
		label += ": "
	}
	return fmt.Sprintf("syncfilter rebuild: %swrote %s: %d rows, %d keys, %d skipped (%d invalid text, %d BLOB, %d NULL), generation %d, m = %d, k = %d, sized for %d at %g, %s, mode %s %s, in %s",
		label, where, sum.Rows, sum.Keys, sum.Skipped, sum.SkippedText, sum.SkippedBlob, sum.SkippedNull, sum.Generation, sum.M, sum.K, sum.Capacity, sum.FPR,
		size(uint64(sum.Bytes)), sum.Mode, sum.Owner, sum.took.Round(time.Millisecond))
}

// printLine writes one line of the run's output on stdout, stamped off a
// terminal as the log's lines are.
func (a *app) printLine(line string) error {
	if !a.terminal {
		line = time.Now().UTC().Format(time.RFC3339) + " " + line
	}
	_, err := fmt.Fprintln(a.stdout, line)
	return err
}

// defaultMode is the snapshot's permission when --mode is not given: as
// readable as the database, no more (0600, plus read for the group and
// for others where they may read the database file).
func defaultMode(db string) uint32 {
	mode := uint32(0o600)
	if info, err := os.Stat(db); err == nil {
		mode |= uint32(info.Mode().Perm()) & 0o044
	}
	return mode
}
