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
	"github.com/syncfilter/syncfilter/syncfilter"
)

// summary is the JSON form of `rebuild --json`. The names are a contract.
type summary struct {
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
}

func (a *app) rebuild(ctx context.Context, args []string) error {
	fs := a.flags("rebuild")
	db, table, column := sourceFlags(fs)
	out := fs.String("out", "", "snapshot `file` to replace atomically (a symbolic link: the file it names is replaced, the link stays)")
	fpr := 0.01
	fs.Var(fraction{&fpr}, "fpr", "target false-positive `rate`, in (0, 1)")
	var capacity uint64
	fs.Var(count{&capacity, syncfilter.MaxBits}, "capacity", "size for at least `N` keys (default: rows × headroom)")
	headroom := 2.0
	fs.Var(bounded{&headroom, 1, 1000}, "headroom", "multiply the row count by `H`, from 1 to 1000, when sizing")
	asJSON := fs.Bool("json", false, "print the summary as JSON on stdout")
	force := fs.Bool("force", false, "replace --out or --metrics-file even if it is not syncfilter's, or is another dataset's snapshot (never the database)")
	unindexed := fs.Bool("allow-unindexed", false, "accept a key column without an index (every confirmation scans the table)")
	busy := 5 * time.Second
	fs.Var(duration{&busy}, "busy-timeout", "how long SQLite waits for a lock another connection (the app) holds, a duration `D` such as 30s")
	var retain uint64 = 100_000
	fs.Var(count{&retain, 1 << 40}, "log-retain", "log entries to keep behind the snapshot for apps with older filters, `N`")
	var mode uint32
	fs.Var(fileMode{&mode}, "mode", "permission of the snapshot file, octal `MODE` (default: 0600, plus read for group and others where they may read the database)")
	ownerFlag := fs.String("owner", "", "give the snapshot to `user` (name or id; default: the database file's owner; only root may give it to another user)")
	groupFlag := fs.String("group", "", "give the snapshot to `group` (name or id; default: the database file's group)")
	every := 5 * time.Second
	fs.Var(duration{&every}, "progress-every", "off a terminal, log the scan's progress every `D` (0: never)")
	metrics := fs.String("metrics-file", "", "write Prometheus textfile-collector metrics to `file` (atomically), on success and on failure")
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
	if capacity > 0 {
		if _, err := syncfilter.NewParams(capacity, fpr); err != nil {
			return usagef("invalid value %d for flag --capacity at --fpr %g: %v", capacity, fpr, err)
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
	a.opens(*db, busy)
	if mode == 0 { // not given
		mode = defaultMode(*db)
	}
	own, err := resolveOwner(*db, *ownerFlag, *groupFlag)
	if err != nil {
		return err
	}
	start := time.Now()
	var m *metricsFile
	if *metrics != "" {
		if m, err = openMetrics(*metrics, *db, *out, *force); err != nil {
			return err
		}
	}
	// The run's metrics are written once: by the run, or, if the process
	// ends without waiting for it (see main), by the abort.
	var once sync.Once
	var metricsErr error
	final := func(o runOutcome) {
		if m == nil {
			return
		}
		once.Do(func() { metricsErr = m.write(o) })
	}
	a.setAbort(func() { final(runOutcome{end: time.Now(), took: time.Since(start), reason: reasonInterrupted}) })
	defer a.setAbort(nil)

	p := newProgress(a.log, a.width)
	if !a.terminal {
		p.every = every
	}
	var progressFn func(done, total int64)
	if a.terminal || every > 0 {
		progressFn = p.update
	}
	rep, err := rebuild.BuildSnapshot(ctx, rebuild.Config{
		Path: *db, Table: *table, Column: *column, Snapshot: *out,
		FPR: fpr, Capacity: capacity, Headroom: headroom, BusyTimeout: busy, LogRetain: retain,
		SnapshotMode: os.FileMode(mode), ReplaceForeignFile: *force, AllowUnindexed: *unindexed,
		Progress: progressFn, ProgressEvery: 10_000,
	})
	p.finish()
	if err != nil {
		final(runOutcome{end: time.Now(), took: time.Since(start), reason: failureReason(err)})
		if metricsErr != nil {
			a.log.printf("syncfilter rebuild: %v", metricsErr)
		}
		return err
	}
	file := rep.Snapshot // the file written: a link's target
	if li, err := os.Lstat(file); err == nil && li.Mode()&os.ModeSymlink != 0 {
		if r, err := fsafe.Resolve(file); err == nil {
			file = r
		}
	}
	for _, n := range own.notes {
		a.log.printf("syncfilter rebuild: %s", n)
	}
	if err := own.apply(file); err != nil {
		a.log.printf("syncfilter rebuild: could not give %s to its owner: %v (it stays %s)", file, err, ownerString(file))
	}
	c := rep.Counts
	sum := summary{Snapshot: rep.Snapshot, Rows: c.Rows, Keys: c.Keys,
		Skipped: c.SkippedText + c.SkippedBlob + c.SkippedNull, SkippedText: c.SkippedText, SkippedBlob: c.SkippedBlob, SkippedNull: c.SkippedNull,
		Generation: rep.Generation, M: rep.M, K: rep.K, Capacity: rep.Capacity, FPR: fpr, EstimatedFPR: rep.EstimatedFPR,
		Bytes: rep.Bytes, Seconds: rep.Took.Seconds(), Mode: fmt.Sprintf("%04o", mode), Owner: ownerString(file)}
	if file != rep.Snapshot {
		sum.File = file
	}
	final(runOutcome{end: time.Now(), took: rep.Took, sum: &sum})
	var failed error
	if metricsErr != nil {
		// The snapshot is in place: say so in the summary, then fail.
		a.log.printf("syncfilter rebuild: %v (the snapshot was written)", metricsErr)
		failed = &exitError{code: exitFailure}
	}
	if err := a.printSummary(sum, *asJSON, rep.Took); err != nil {
		return err
	}
	return failed
}

// printSummary writes the run's last line, on stdout: the summary, as
// text (stamped off a terminal) or JSON. Nothing is logged after it.
func (a *app) printSummary(sum summary, asJSON bool, took time.Duration) error {
	a.log.close()
	if asJSON {
		return json.NewEncoder(a.stdout).Encode(sum)
	}
	where := sum.Snapshot
	if sum.File != "" {
		where += " (-> " + sum.File + ")"
	}
	line := fmt.Sprintf("syncfilter rebuild: wrote %s: %d rows, %d keys, %d skipped (%d invalid text, %d BLOB, %d NULL), generation %d, m = %d, k = %d, sized for %d at %g, %s, mode %s %s, in %s",
		where, sum.Rows, sum.Keys, sum.Skipped, sum.SkippedText, sum.SkippedBlob, sum.SkippedNull, sum.Generation, sum.M, sum.K, sum.Capacity, sum.FPR,
		size(uint64(sum.Bytes)), sum.Mode, sum.Owner, took.Round(time.Millisecond))
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
