package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

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
}

func (a *app) rebuild(ctx context.Context, args []string) error {
	fs := a.flags("rebuild")
	db, table, column := sourceFlags(fs)
	out := fs.String("out", "", "snapshot `file` to replace atomically")
	fpr := 0.01
	fs.Var(fraction{&fpr}, "fpr", "target false-positive `rate`, in (0, 1)")
	var capacity uint64
	fs.Var(count{&capacity, syncfilter.MaxBits}, "capacity", "size for at least `N` keys (default: rows × headroom)")
	headroom := 2.0
	fs.Var(bounded{&headroom, 1, 1000}, "headroom", "multiply the row count by `H`, from 1 to 1000, when sizing")
	asJSON := fs.Bool("json", false, "print the summary as JSON on stdout")
	force := fs.Bool("force", false, "replace --out even if it is not a snapshot, or is another dataset's (never the database)")
	unindexed := fs.Bool("allow-unindexed", false, "accept a key column without an index (every confirmation scans the table)")
	busy := 5 * time.Second
	fs.Var(duration{&busy}, "busy-timeout", "how long to wait for a lock held by the app, e.g. `5s`")
	var retain uint64 = 100_000
	fs.Var(count{&retain, 1 << 40}, "log-retain", "log entries to keep behind the snapshot for apps with older filters, `N`")
	mode := uint32(0o600)
	fs.Var(fileMode{&mode}, "mode", "permission of the snapshot file, octal `MODE`: the app's user must be able to read it")
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
	if info, err := os.Stat(*out); err == nil && info.IsDir() {
		return usagef("--out %s is a directory: name a file", *out)
	}
	p := newProgress(a.stderr, a.terminal, a.width)
	start := time.Now()
	if *metrics != "" {
		if err := checkMetricsPath(*metrics); err != nil {
			return err
		}
	}
	rep, err := rebuild.BuildSnapshot(ctx, rebuild.Config{
		Path: *db, Table: *table, Column: *column, Snapshot: *out,
		FPR: fpr, Capacity: capacity, Headroom: headroom, BusyTimeout: busy, LogRetain: retain,
		SnapshotMode: os.FileMode(mode), ReplaceForeignFile: *force, AllowUnindexed: *unindexed,
		Progress: p.update, ProgressEvery: 10_000,
	})
	p.finish()
	if err != nil {
		if *metrics != "" {
			if merr := writeMetrics(*metrics, nil, time.Since(start)); merr != nil {
				fmt.Fprintf(a.stderr, "syncfilter rebuild: %v\n", merr)
			}
		}
		return err
	}
	c := rep.Counts
	sum := summary{Snapshot: rep.Snapshot, Rows: c.Rows, Keys: c.Keys,
		Skipped: c.SkippedText + c.SkippedBlob + c.SkippedNull, SkippedText: c.SkippedText, SkippedBlob: c.SkippedBlob, SkippedNull: c.SkippedNull,
		Generation: rep.Generation, M: rep.M, K: rep.K, Capacity: rep.Capacity, FPR: fpr, EstimatedFPR: rep.EstimatedFPR,
		Bytes: rep.Bytes, Seconds: rep.Took.Seconds()}
	if *metrics != "" {
		if err := writeMetrics(*metrics, &sum, rep.Took); err != nil {
			return err
		}
	}
	if *asJSON {
		return json.NewEncoder(a.stdout).Encode(sum)
	}
	line := fmt.Sprintf("syncfilter rebuild: wrote %s: %d rows, %d keys, %d skipped (%d invalid text, %d BLOB, %d NULL), generation %d, m = %d, k = %d, sized for %d at %g, %s, in %s",
		sum.Snapshot, sum.Rows, sum.Keys, sum.Skipped, sum.SkippedText, sum.SkippedBlob, sum.SkippedNull, sum.Generation, sum.M, sum.K, sum.Capacity, fpr,
		size(uint64(sum.Bytes)), rep.Took.Round(time.Millisecond))
	if !a.terminal {
		line = time.Now().UTC().Format(time.RFC3339) + " " + line
	}
	fmt.Fprintln(a.stdout, line)
	return nil
}

// checkMetricsPath refuses a metrics file in a directory that does not
// exist, before the scan.
func checkMetricsPath(path string) error {
	d, err := os.Stat(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("metrics file %s: %w", path, err)
	}
	if !d.IsDir() {
		return usagef("metrics file %s: %s is not a directory", path, filepath.Dir(path))
	}
	return nil
}

// writeMetrics writes the Prometheus textfile-collector metrics of a run
// atomically (temporary file, rename): sum is nil for a failed run, which
// records only the failure time and duration.
func writeMetrics(path string, sum *summary, took time.Duration) error {
	var b strings.Builder
	metric := func(name, help string, value float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s %g\n", name, help, name, name, value)
	}
	now := float64(time.Now().UnixNano()) / 1e9
	if sum == nil {
		metric("syncfilter_rebuild_last_failure_timestamp_seconds", "Time of the last failed rebuild.", now)
		metric("syncfilter_rebuild_last_failure_duration_seconds", "Duration of the last failed rebuild.", took.Seconds())
	} else {
		metric("syncfilter_rebuild_last_success_timestamp_seconds", "Time of the last successful rebuild.", now)
		metric("syncfilter_rebuild_duration_seconds", "Duration of the last successful rebuild.", took.Seconds())
		metric("syncfilter_rebuild_rows", "Rows of the source table scanned by the last rebuild.", float64(sum.Rows))
		metric("syncfilter_rebuild_keys", "Keys inserted into the filter by the last rebuild.", float64(sum.Keys))
		metric("syncfilter_rebuild_skipped_rows", "Rows skipped by the last rebuild (invalid text, BLOB or NULL ids).", float64(sum.Skipped))
		metric("syncfilter_rebuild_bytes", "Size of the snapshot file written by the last rebuild.", float64(sum.Bytes))
		metric("syncfilter_rebuild_generation", "Log generation the last snapshot covers.", float64(sum.Generation))
		metric("syncfilter_rebuild_estimated_fpr", "Estimated false-positive rate of the last snapshot, from its bits.", sum.EstimatedFPR)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write metrics: %w", err)
	}
	_, err = tmp.WriteString(b.String())
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write metrics: %w", err)
	}
	return nil
}
