package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/syncfilter/syncfilter/internal/fsafe"
	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/snapshot"
)

// The metrics file of `rebuild --metrics-file`, for node_exporter's
// textfile collector (Prometheus text exposition format 0.0.4). Each run
// rewrites it whole, atomically, carrying over what the previous file
// said: a failed run keeps the last success's time and figures, a
// successful run keeps the last failure's time and reason. Every file
// starts with metricsHeader; only such a file (or none) is replaced
// without --force.
const metricsHeader = "# syncfilter rebuild metrics: written by `syncfilter rebuild --metrics-file`, replaced atomically by every run\n"

// metricsMaxBytes bounds what is read of a previous metrics file.
const metricsMaxBytes = 64 << 10

// metricDef is one metric family the file holds: gauges, in this order.
type metricDef struct{ name, help string }

var metricDefs = []metricDef{
	{"syncfilter_rebuild_last_run_timestamp_seconds", "Unix time the last run ended, successful or not."},
	{"syncfilter_rebuild_last_run_success", "1 if the last run succeeded, 0 if it failed."},
	{"syncfilter_rebuild_consecutive_failures", "Failed runs since the last successful one."},
	{"syncfilter_rebuild_last_success_timestamp_seconds", "Unix time the last successful run ended (kept by failed runs)."},
	{"syncfilter_rebuild_duration_seconds", "Duration of the last successful run (kept by failed runs)."},
	{"syncfilter_rebuild_rows", "Rows of the source table scanned by the last successful run."},
	{"syncfilter_rebuild_keys", "Keys inserted into the filter by the last successful run."},
	{"syncfilter_rebuild_skipped_rows", "Rows skipped by the last successful run (ids that are invalid text, BLOB or NULL)."},
	{"syncfilter_rebuild_bytes", "Size in bytes of the snapshot written by the last successful run."},
	{"syncfilter_rebuild_generation", "Log generation the last written snapshot covers."},
	{"syncfilter_rebuild_estimated_fpr", "Estimated false-positive rate of the last written snapshot, from its bits."},
	{"syncfilter_rebuild_last_failure_timestamp_seconds", "Unix time the last failed run ended (kept by successful runs)."},
	{"syncfilter_rebuild_last_failure_duration_seconds", "Duration of the last failed run (kept by successful runs)."},
	{"syncfilter_rebuild_last_failure_reason", "Always 1; the label reason says why the last failed run failed (kept by successful runs)."},
}

// Failure reasons, the values of the reason label: a fixed set, so that
// the label never multiplies series.
const (
	reasonInterrupted = "interrupted" // SIGINT or SIGTERM
	reasonLocked      = "locked"      // waited longer than --busy-timeout for a lock
	reasonPath        = "unsafe_path" // --out refused: the database's file, not a regular file, another dataset's
	reasonSource      = "source"      // the table or column is missing or refused
	reasonPermission  = "permission"  // a file or the database could not be opened or written
	reasonMissing     = "missing_file"
	reasonSQLite      = "sqlite" // another SQLite error
	reasonOther       = "other"
)

// failureReason classifies a failed run's error.
func failureReason(err error) string {
	var se sqlite3.Error
	isSQLite := errors.As(err, &se)
	switch {
	case errors.Is(err, context.Canceled):
		return reasonInterrupted
	case isSQLite && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked):
		return reasonLocked
	case errors.Is(err, rebuild.ErrUnsafeTarget), errors.Is(err, fsafe.ErrProtected), errors.Is(err, fsafe.ErrNotRegular):
		return reasonPath
	case errors.Is(err, rebuild.ErrNoSource) && !errors.Is(err, os.ErrNotExist), errors.Is(err, rebuild.ErrInexactColumn),
		errors.Is(err, rebuild.ErrNotIndexed), errors.Is(err, rebuild.ErrBadName):
		return reasonSource
	case errors.Is(err, os.ErrPermission), isSQLite && (se.Code == sqlite3.ErrReadonly || se.Code == sqlite3.ErrPerm || se.Code == sqlite3.ErrCantOpen):
		return reasonPermission
	case errors.Is(err, os.ErrNotExist):
		return reasonMissing
	case isSQLite:
		return reasonSQLite
	}
	return reasonOther
}

// metricsFile is the checked metrics path and what its previous version
// said.
type metricsFile struct {
	t          fsafe.Target
	protected  []string           // the database's files
	prev       map[string]float64 // by metric name, from the previous file
	prevReason string             // its reason label
}

// openMetrics checks the metrics path before anything is scanned, by the
// same rule as every file the command writes: never the database or one
// of its files (even with --force), never --out, never a directory, FIFO
// or other file that is not a regular file; an existing file that does
// not start with metricsHeader only with --force; the directory must
// exist and take new files. It then reads the previous metrics, if the
// file is ours.
func openMetrics(path, db, out string, force bool) (*metricsFile, error) {
	t, err := fsafe.CheckWrite(path, fsafe.DatabaseFiles(db)...)
	switch {
	case errors.Is(err, fsafe.ErrProtected):
		return nil, usagef("--metrics-file %s is the database or one of its files: name another file", path)
	case errors.Is(err, fsafe.ErrNotRegular) && t.Info != nil && t.Info.IsDir():
		return nil, usagef("--metrics-file %s is a directory: name a file", path)
	case err != nil:
		return nil, fmt.Errorf("metrics file %s: %w", path, err)
	}
	if o, err := fsafe.Resolve(out); err == nil && o == t.File {
		return nil, usagef("--metrics-file %s is the snapshot --out %s: name another file", path, out)
	}
	d, err := os.Stat(t.Dir)
	if err != nil {
		return nil, fmt.Errorf("metrics file %s: %w", path, err)
	}
	if !d.IsDir() {
		return nil, usagef("metrics file %s: %s is not a directory", path, t.Dir)
	}
	probe, err := fsafe.CreateTemp(t.Dir, filepath.Base(t.File), 0o644)
	if err != nil {
		return nil, fmt.Errorf("metrics file %s: cannot create files in %s: %w", path, t.Dir, err)
	}
	_ = probe.Close()
	_ = os.Remove(probe.Name())
	m := &metricsFile{t: t, protected: fsafe.DatabaseFiles(db), prev: map[string]float64{}}
	if t.Info == nil {
		return m, nil
	}
	f, _, err := fsafe.OpenRegular(t.File)
	if err != nil {
		return nil, fmt.Errorf("metrics file %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, metricsMaxBytes))
	if err != nil {
		return nil, fmt.Errorf("metrics file %s: %w", path, err)
	}
	if !strings.HasPrefix(string(b), metricsHeader) {
		if !force {
			return nil, fmt.Errorf("metrics file %s: the existing file is not syncfilter's metrics (it does not start with %q): pass --force to replace it, or name another file: %w",
				path, strings.TrimSpace(metricsHeader[:30]), rebuild.ErrUnsafeTarget)
		}
		return m, nil
	}
	m.parse(string(b))
	return m, nil
}

// parse reads back the samples this command wrote: "name value" and
// "name{reason=\"...\"} value". Anything else is ignored.
func (m *metricsFile) parse(text string) {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		name, labels, _ := strings.Cut(line[:i], "{")
		m.prev[name] = v
		if r, ok := strings.CutPrefix(labels, `reason="`); ok {
			m.prevReason, _, _ = strings.Cut(r, `"`)
		}
	}
}

// runOutcome is what one run adds to the metrics.
type runOutcome struct {
	end    time.Time
	took   time.Duration
	sum    *summary // nil for a failed run
	reason string   // a failed run's
}

// render returns the new file: this run's outcome over what the previous
// file said.
func (m *metricsFile) render(o runOutcome) string {
	v := map[string]float64{}
	for k, x := range m.prev {
		v[k] = x
	}
	reason := m.prevReason
	now := float64(o.end.UnixMilli()) / 1e3
	v["syncfilter_rebuild_last_run_timestamp_seconds"] = now
	if s := o.sum; s != nil {
		v["syncfilter_rebuild_last_run_success"] = 1
		v["syncfilter_rebuild_consecutive_failures"] = 0
		v["syncfilter_rebuild_last_success_timestamp_seconds"] = now
		v["syncfilter_rebuild_duration_seconds"] = o.took.Seconds()
		v["syncfilter_rebuild_rows"] = float64(s.Rows)
		v["syncfilter_rebuild_keys"] = float64(s.Keys)
		v["syncfilter_rebuild_skipped_rows"] = float64(s.Skipped)
		v["syncfilter_rebuild_bytes"] = float64(s.Bytes)
		v["syncfilter_rebuild_generation"] = float64(s.Generation)
		v["syncfilter_rebuild_estimated_fpr"] = s.EstimatedFPR
	} else {
		v["syncfilter_rebuild_last_run_success"] = 0
		v["syncfilter_rebuild_consecutive_failures"]++
		v["syncfilter_rebuild_last_failure_timestamp_seconds"] = now
		v["syncfilter_rebuild_last_failure_duration_seconds"] = o.took.Seconds()
		v["syncfilter_rebuild_last_failure_reason"] = 1
		reason = o.reason
	}
	var b strings.Builder
	b.WriteString(metricsHeader)
	for _, d := range metricDefs {
		x, ok := v[d.name]
		if !ok {
			continue // never happened (no success yet, or no failure yet)
		}
		labels := ""
		if d.name == "syncfilter_rebuild_last_failure_reason" {
			if reason == "" {
				reason = reasonOther
			}
			labels = `{reason="` + reason + `"}`
		}
		format := byte('f') // times and counts in full
		if x != 0 && x > -1 && x < 1 {
			format = 'g' // a rate: 2.04e-07, not 0.000000204
		}
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s%s %s\n", d.name, d.help, d.name, d.name, labels, strconv.FormatFloat(x, format, -1, 64))
	}
	return b.String()
}

// write replaces the metrics file atomically with this run's metrics
// (temporary file in the directory of the file it replaces, fsync,
// rename, fsync of the directory). The new file is readable by everyone
// (0644: node_exporter runs as its own user) and keeps the owner and
// group of the file it replaces where allowed.
func (m *metricsFile) write(o runOutcome) error {
	base := filepath.Base(m.t.File)
	fsafe.SweepTemp(m.t.Dir, base, time.Now().Add(-snapshot.StaleTemp), []byte(metricsHeader))
	tmp, err := fsafe.CreateTemp(m.t.Dir, base, 0o644)
	if err != nil {
		return fmt.Errorf("write metrics: %w", err)
	}
	_, err = tmp.WriteString(m.render(o))
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil && m.t.Info != nil {
		fsafe.CopyOwner(tmp, m.t.Info)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil { // the path may have changed since it was checked
		var again fsafe.Target
		if again, err = fsafe.CheckWrite(m.t.Path, m.protected...); err == nil && again.File != m.t.File {
			err = fmt.Errorf("%s now resolves to %s, not %s", m.t.Path, again.File, m.t.File)
		}
	}
	if err == nil {
		err = os.Rename(tmp.Name(), m.t.File)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write metrics %s: %w", m.t.Path, err)
	}
	if err := fsafe.SyncDir(m.t.Dir); err != nil {
		return fmt.Errorf("write metrics %s: sync directory: %w", m.t.Path, err)
	}
	return nil
}

// metricNames lists the families documented in the README, in order.
func metricNames() []string {
	names := make([]string, len(metricDefs))
	for i, d := range metricDefs {
		names[i] = d.name
	}
	sort.Strings(names)
	return names
}
