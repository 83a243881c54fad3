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

	"github.com/syncfilter/syncfilter/internal/fsafe"
	"github.com/syncfilter/syncfilter/internal/sqlitecode"
	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/rebuild/ops"
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
	code, isSQLite := sqlitecode.Of(err)
	code &= 0xff
	switch {
	case errors.Is(err, context.Canceled):
		return reasonInterrupted
	case isSQLite && (code == sqlitecode.Busy || code == sqlitecode.Locked):
		return reasonLocked
	case errors.Is(err, ops.ErrUnsafeTarget), errors.Is(err, fsafe.ErrProtected), errors.Is(err, fsafe.ErrNotRegular):
		return reasonPath
	case errors.Is(err, rebuild.ErrNoSource) && !errors.Is(err, os.ErrNotExist), errors.Is(err, rebuild.ErrInexactColumn),
		errors.Is(err, rebuild.ErrNotIndexed), errors.Is(err, rebuild.ErrBadConfig):
		return reasonSource
	case errors.Is(err, os.ErrPermission), isSQLite && (code == sqlitecode.ReadOnly || code == sqlitecode.Perm || code == sqlitecode.CantOpen):
		return reasonPermission
	case errors.Is(err, os.ErrNotExist):
		return reasonMissing
	case isSQLite:
		return reasonSQLite
	}
	return reasonOther
}

// The metrics file holds one series per source, labelled table and
// column (the library's own table, which the library reports as "" and
// "", is labelled ownTable and ownColumn: a label's empty value is no
// label at all). A run replaces the series of the sources it rebuilt. A
// single-source run keeps the other series as the previous file had them
// (several single-source jobs may share a file); an --all run keeps only
// the sources the database lists (a detached source's series goes).
const (
	ownTable  = "syncfilter_fetched" // the library's own table (MarkFetched), as SQLite names it
	ownColumn = "key"
)

// seriesKey names one source's series: its labels table and column.
type seriesKey struct{ table, column string }

// keyOf returns the series of the source table.column as the library
// names it ("" and "": its own table).
func keyOf(table, column string) seriesKey {
	if table == "" && column == "" {
		return seriesKey{ownTable, ownColumn}
	}
	return seriesKey{table, column}
}

// series is one source's samples: values by metric name, and the reason
// label of its last failure.
type series struct {
	v      map[string]float64
	reason string
}

// metricsFile is the checked metrics path and what its previous version
// said.
type metricsFile struct {
	t         fsafe.Target
	protected []string              // the database's files
	prev      map[seriesKey]*series // from the previous file, by source
}

// openMetrics checks the metrics path before anything is scanned, by the
// same rule as every file the command writes: never the database or one
// of its files (even with --force), never a directory, FIFO or other file
// that is not a regular file; an existing file that does not start with
// metricsHeader only with --force; the directory must exist and take new
// files. It then reads the previous metrics, if the file is ours. The
// snapshots the run writes are checked against it with notSnapshot.
func openMetrics(path, db string, force bool) (*metricsFile, error) {
	t, err := fsafe.CheckWrite(path, fsafe.DatabaseFiles(db)...)
	switch {
	case errors.Is(err, fsafe.ErrProtected):
		return nil, usagef("--metrics-file %s is the database or one of its files: name another file", path)
	case errors.Is(err, fsafe.ErrNotRegular) && t.Info != nil && t.Info.IsDir():
		return nil, usagef("--metrics-file %s is a directory: name a file", path)
	case err != nil:
		return nil, fmt.Errorf("metrics file %s: %w", path, err)
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
	m := &metricsFile{t: t, protected: fsafe.DatabaseFiles(db), prev: map[seriesKey]*series{}}
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
				path, strings.TrimSpace(metricsHeader[:30]), ops.ErrUnsafeTarget)
		}
		return m, nil
	}
	m.parse(string(b))
	return m, nil
}

// notSnapshot refuses a metrics file that is the snapshot file out (flag
// names the flag or source out comes from, for the message).
func (m *metricsFile) notSnapshot(out, flag string) error {
	if o, err := fsafe.Resolve(out); err == nil && o == m.t.File {
		return usagef("--metrics-file %s is the snapshot %s %s: name another file", m.t.Path, flag, out)
	}
	return nil
}

// parse reads back the samples this command wrote: "name value" and
// "name{label=\"value\",...} value". Anything else is ignored.
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
		name, rest, hasLabels := strings.Cut(line[:i], "{")
		labels := map[string]string{}
		if hasLabels {
			if labels = parseLabels(rest); labels == nil {
				continue
			}
		}
		table, ok := labels["table"]
		if !ok {
			continue // not a series of the library's
		}
		k := seriesKey{table, labels["column"]}
		s := m.prev[k]
		if s == nil {
			s = &series{v: map[string]float64{}}
			m.prev[k] = s
		}
		s.v[name] = v
		if r, ok := labels["reason"]; ok {
			s.reason = r
		}
	}
}

// parseLabels reads `a="x",b="y"}` (what follows a sample's "{"), or
// returns nil.
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for {
		if rest, ok := strings.CutPrefix(s, "}"); ok && rest == "" {
			return out
		}
		name, rest, ok := strings.Cut(s, `="`)
		if !ok || name == "" {
			return nil
		}
		var v strings.Builder
		for {
			if rest == "" {
				return nil
			}
			c := rest[0]
			rest = rest[1:]
			if c == '"' {
				break
			}
			if c == '\\' && rest != "" {
				c, rest = rest[0], rest[1:]
				if c == 'n' {
					c = '\n'
				}
			}
			v.WriteByte(c)
		}
		out[name] = v.String()
		s = strings.TrimPrefix(rest, ",")
	}
}

// runOutcome is what one run adds to a source's series.
type runOutcome struct {
	end    time.Time
	took   time.Duration
	sum    *summary // nil for a failed run
	reason string   // a failed run's
}

// sourceRun is the outcome of one source.
type sourceRun struct {
	key seriesKey
	o   runOutcome
}

// apply returns the series prev (nil: none yet) with outcome o.
func apply(prev *series, o runOutcome) *series {
	s := &series{v: map[string]float64{}}
	if prev != nil {
		for k, x := range prev.v {
			s.v[k] = x
		}
		s.reason = prev.reason
	}
	v := s.v
	now := float64(o.end.UnixMilli()) / 1e3
	v["syncfilter_rebuild_last_run_timestamp_seconds"] = now
	if sum := o.sum; sum != nil {
		v["syncfilter_rebuild_last_run_success"] = 1
		v["syncfilter_rebuild_consecutive_failures"] = 0
		v["syncfilter_rebuild_last_success_timestamp_seconds"] = now
		v["syncfilter_rebuild_duration_seconds"] = o.took.Seconds()
		v["syncfilter_rebuild_rows"] = float64(sum.Rows)
		v["syncfilter_rebuild_keys"] = float64(sum.Keys)
		v["syncfilter_rebuild_skipped_rows"] = float64(sum.Skipped)
		v["syncfilter_rebuild_bytes"] = float64(sum.Bytes)
		v["syncfilter_rebuild_generation"] = float64(sum.Generation)
		v["syncfilter_rebuild_estimated_fpr"] = sum.EstimatedFPR
	} else {
		v["syncfilter_rebuild_last_run_success"] = 0
		v["syncfilter_rebuild_consecutive_failures"]++
		v["syncfilter_rebuild_last_failure_timestamp_seconds"] = now
		v["syncfilter_rebuild_last_failure_duration_seconds"] = o.took.Seconds()
		v["syncfilter_rebuild_last_failure_reason"] = 1
		s.reason = o.reason
	}
	return s
}

// render returns the new file: the outcomes of this run over what the
// previous file said. keepOthers keeps the series of the sources not in
// runs (a single-source run); otherwise only runs' sources are written.
// A file written before the labels gives its series to the one source of
// a single-source run.
func (m *metricsFile) render(runs []sourceRun, keepOthers bool) string {
	all := map[seriesKey]*series{}
	if keepOthers {
		for k, s := range m.prev {
			all[k] = s
		}
	}
	for _, r := range runs {
		all[r.key] = apply(m.prev[r.key], r.o)
	}
	keys := make([]seriesKey, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].table != keys[j].table {
			return keys[i].table < keys[j].table
		}
		return keys[i].column < keys[j].column
	})
	var b strings.Builder
	b.WriteString(metricsHeader)
	for _, d := range metricDefs {
		head := false
		for _, k := range keys {
			s := all[k]
			x, ok := s.v[d.name]
			if !ok {
				continue // never happened (no success yet, or no failure yet)
			}
			if !head {
				fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", d.name, d.help, d.name)
				head = true
			}
			labels := `table="` + labelValue(k.table) + `",column="` + labelValue(k.column) + `"`
			if d.name == "syncfilter_rebuild_last_failure_reason" {
				reason := s.reason
				if reason == "" {
					reason = reasonOther
				}
				labels += `,reason="` + labelValue(reason) + `"`
			}
			format := byte('f') // times and counts in full
			if x != 0 && x > -1 && x < 1 {
				format = 'g' // a rate: 2.04e-07, not 0.000000204
			}
			fmt.Fprintf(&b, "%s{%s} %s\n", d.name, labels, strconv.FormatFloat(x, format, -1, 64))
		}
	}
	return b.String()
}

// labelValue escapes a label's value as the exposition format wants.
func labelValue(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// failedAll returns a failure of every source the previous file has a
// series of: a run that failed before it could list the sources.
func (m *metricsFile) failedAll(o runOutcome) []sourceRun {
	var runs []sourceRun
	for k := range m.prev {
		runs = append(runs, sourceRun{k, o})
	}
	return runs
}

// write replaces the metrics file atomically with this run's metrics
// (temporary file in the directory of the file it replaces, fsync,
// rename, fsync of the directory). The new file is readable by everyone
// (0644: node_exporter runs as its own user) and keeps the owner and
// group of the file it replaces where allowed.
func (m *metricsFile) write(runs []sourceRun, keepOthers bool) error {
	base := filepath.Base(m.t.File)
	fsafe.SweepTemp(m.t.Dir, base, time.Now().Add(-snapshot.StaleTemp), []byte(metricsHeader))
	tmp, err := fsafe.CreateTemp(m.t.Dir, base, 0o644)
	if err != nil {
		return fmt.Errorf("write metrics: %w", err)
	}
	_, err = tmp.WriteString(m.render(runs, keepOthers))
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
