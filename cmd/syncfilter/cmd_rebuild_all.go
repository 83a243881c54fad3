package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/syncfilter/syncfilter/internal/fsafe"
	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/rebuild/ops"
	"github.com/syncfilter/syncfilter/snapshot"
)

// `rebuild --all`: every source the database lists (ops.Sources), one
// after the other (rebuilds of one database take turns anyway), each into
// the snapshot file its last save recorded or, with none recorded, at
// ops.DefaultSnapshot (in --out-dir if given). Every path is checked
// before the first scan; a source whose path is refused, or whose rebuild
// fails, fails alone and the others go on. One metrics file for the run,
// one series per source, written once at the end.

// allResult is one source's entry in `rebuild --all --json`: the
// summary's fields when it was rebuilt, the error and its reason (the
// metrics' reason label) when not. The names are a contract.
type allResult struct {
	Table    string `json:"table"`
	Column   string `json:"column"`
	Snapshot string `json:"snapshot"`
	OK       bool   `json:"ok"`
	Error    string `json:"error,omitempty"`
	Reason   string `json:"reason,omitempty"`
	*summary
}

// planned is one source of an --all run and where its snapshot goes.
type planned struct {
	src  ops.Attached
	key  seriesKey // its names in the output and the metrics
	name string    // table.column
	out  string    // the snapshot path
	err  error     // the path was refused before any scan
}

func (a *app) rebuildAll(ctx context.Context, o rebuildOpts, outDir, metricsPath string) error {
	start := time.Now()
	if outDir != "" {
		if info, err := os.Stat(outDir); err != nil || !info.IsDir() {
			return usagef("--out-dir %s is not a directory", outDir)
		}
	}
	var m *metricsFile
	if metricsPath != "" {
		var err error
		if m, err = openMetrics(metricsPath, o.db, o.force); err != nil {
			return err
		}
	}
	// What the metrics say is written once: at the end, or, if the
	// process ends without waiting for the run (see main), by the abort.
	// Before the sources are listed, a failure or an interruption is
	// every source's the previous file knew; afterwards, each source
	// not done yet is interrupted.
	var mu sync.Mutex
	var plan []planned
	var runs []*sourceRun // plan's outcomes; nil: not done
	listed := false
	var once sync.Once
	var metricsErr error
	final := func(failure string) {
		if m == nil {
			return
		}
		once.Do(func() {
			fail := runOutcome{end: time.Now(), took: time.Since(start), reason: failure}
			mu.Lock()
			list := m.failedAll(fail)
			if listed {
				list = make([]sourceRun, len(plan))
				for i, p := range plan {
					if r := runs[i]; r != nil {
						list[i] = *r
					} else {
						list[i] = sourceRun{p.key, fail}
					}
				}
			}
			mu.Unlock()
			metricsErr = m.write(list, false)
		})
	}
	a.setAbort(func() { final(reasonInterrupted) })
	defer a.setAbort(nil)
	list, err := ops.Sources(ctx, a.dbConfig(rebuild.DBConfig{Path: o.db, BusyTimeout: o.busy}))
	if err != nil {
		if final(failureReason(err)); metricsErr != nil {
			a.log.printf("syncfilter rebuild: %v", metricsErr)
		}
		return explainReadOnly(o.db, err)
	}
	made := planAll(list, o.db, outDir, o.force)
	if m != nil {
		for _, p := range made {
			if err := m.notSnapshot(p.out, "of "+p.name); err != nil {
				return err
			}
		}
	}
	mu.Lock()
	plan, runs, listed = made, make([]*sourceRun, len(made)), true
	mu.Unlock()

	if len(plan) > 0 {
		for _, n := range o.own.notes {
			a.log.printf("syncfilter rebuild: %s", n)
		}
	}
	results := make([]allResult, len(plan))
	failed := 0
	for i, p := range plan {
		began := time.Now()
		res := allResult{Table: p.key.table, Column: p.key.column, Snapshot: p.out}
		var sum summary
		err := p.err
		if err == nil {
			if err = ctx.Err(); err == nil {
				one := o
				one.compare = p.src.Compare // as the database records it
				sum, err = a.buildOne(ctx, one, p.src.Table, p.src.Column, p.out, p.name)
			}
		}
		run := sourceRun{key: p.key}
		if err != nil {
			failed++
			res.Error, res.Reason = oneLine(err.Error()), failureReason(err)
			run.o = runOutcome{end: time.Now(), took: time.Since(began), reason: res.Reason}
			a.log.printf("syncfilter rebuild: %s: %s", p.name, a.sourceError(err, p, o.db))
		} else {
			res.OK, res.summary = true, &sum
			run.o = runOutcome{end: time.Now(), took: sum.took, sum: &sum}
			if !o.asJSON {
				if err := a.printLine(summaryLine(sum, p.name)); err != nil {
					return err
				}
			}
		}
		mu.Lock()
		runs[i] = &run
		mu.Unlock()
		results[i] = res
	}
	final(reasonInterrupted) // the reason of sources not done: none
	if metricsErr != nil {
		a.log.printf("syncfilter rebuild: %v (the snapshots were written)", metricsErr)
		failed++ // not a source's, but the run's: the exit status says so
	}
	a.log.close()
	var out error
	if failed > 0 {
		out = &exitError{code: exitFailure}
	}
	if o.asJSON {
		if err := json.NewEncoder(a.stdout).Encode(results); err != nil {
			return err
		}
		return out
	}
	if err := a.printLine(allLine(o.db, results, time.Since(start))); err != nil {
		return err
	}
	return out
}

// allLine is the last line of a text --all run: how many sources were
// rebuilt, and which failed and why.
func allLine(db string, results []allResult, took time.Duration) string {
	if len(results) == 0 {
		return fmt.Sprintf("syncfilter rebuild: no source is attached in %s: nothing to rebuild (an app's first open, or syncfilter rebuild --table --column --out, attaches one)", db)
	}
	var bad []string
	for _, r := range results {
		if !r.OK {
			bad = append(bad, r.Table+"."+r.Column+": "+r.Reason)
		}
	}
	line := fmt.Sprintf("syncfilter rebuild: %d of %d sources of %s rebuilt", len(results)-len(bad), len(results), db)
	if len(bad) > 0 {
		line += fmt.Sprintf(", %d failed (%s)", len(bad), strings.Join(bad, ", "))
	}
	return line + fmt.Sprintf(", in %s", took.Round(time.Millisecond))
}

// sourceError is a failed source's message, with what to do where the
// failure says it: a lock held too long, a table the app dropped.
func (a *app) sourceError(err error, p planned, db string) string {
	if errors.Is(err, context.Canceled) {
		return "interrupted"
	}
	msg := oneLine(err.Error())
	msg += a.lockHint("rebuild", err, msg)
	if errors.Is(err, rebuild.ErrNoSource) && !errors.Is(err, os.ErrNotExist) {
		msg += fmt.Sprintf(" (if the app no longer has it: syncfilter detach --db %s --table %s --column %s)", db, p.src.Table, p.src.Column)
	}
	return msg
}

// planAll decides where the snapshot of each listed source goes and
// checks every path before anything is scanned (see checkAllTarget). Two
// sources whose snapshots would be one file both fail.
func planAll(list []ops.Attached, db, outDir string, force bool) []planned {
	dbAbs, err := filepath.Abs(db)
	if err != nil {
		dbAbs = db
	}
	dbUID := -1
	if info, err := os.Stat(db); err == nil {
		if uid, _, ok := fsafe.Owner(info); ok {
			dbUID = uid
		}
	}
	plan := make([]planned, len(list))
	files := map[string]int{} // resolved snapshot file → the first source writing it
	for i, src := range list {
		k := keyOf(src.Table, src.Column)
		p := planned{src: src, key: k, name: k.table + "." + k.column}
		recorded := src.Snapshot != ""
		if recorded {
			p.out = src.Snapshot
			if !filepath.IsAbs(p.out) { // the library records absolute paths
				p.out = filepath.Join(filepath.Dir(dbAbs), p.out)
			}
		} else {
			p.out = ops.DefaultSnapshot(db, src.Table, src.Column)
			if outDir != "" {
				p.out = filepath.Join(outDir, filepath.Base(p.out))
			}
			if strings.ContainsAny(src.Table+src.Column, `/\`) { // names the database holds, not the operator
				p.err = fmt.Errorf("snapshot path %s: the source's names do not make a file name: %w", p.out, rebuild.ErrBadConfig)
			}
		}
		if p.err == nil {
			p.err = checkAllTarget(p.out, db, src.DatasetID, recorded, dbUID, force)
		}
		if p.err == nil {
			file, _ := fsafe.Resolve(p.out)
			if j, dup := files[file]; dup {
				p.err = fmt.Errorf("check snapshot path %s: it is also the snapshot of %s: %w", p.out, plan[j].name, ops.ErrUnsafeTarget)
				if plan[j].err == nil {
					plan[j].err = fmt.Errorf("check snapshot path %s: it is also the snapshot of %s: %w", plan[j].out, p.name, ops.ErrUnsafeTarget)
				}
			} else {
				files[file] = i
			}
		}
		plan[i] = p
	}
	return plan
}

// checkAllTarget checks one source's snapshot path before any scan, by
// the rule every file the command writes follows (internal/fsafe: never
// the database or its files, never a file that is not a regular file),
// and two more, since --all takes the paths from the database rather than
// from the operator: an existing file that is not a snapshot is never
// replaced, --force or not (--force replaces only another dataset's
// snapshot); and a path the database recorded is written only in a
// directory the database's owner owns, unless this process runs as that
// owner, so that a job run as root never writes, for the app's database,
// where the app's user could not. The directory must take new files. The
// library checks the path again before it attaches anything.
func checkAllTarget(out, db string, ds [16]byte, recorded bool, dbUID int, force bool) error {
	refuse := func(why string) error {
		return fmt.Errorf("check snapshot path %s: %s: %w", out, why, ops.ErrUnsafeTarget)
	}
	t, err := fsafe.CheckWrite(out, fsafe.DatabaseFiles(db)...)
	switch {
	case errors.Is(err, fsafe.ErrProtected):
		return refuse("it is one of the database's own files")
	case errors.Is(err, fsafe.ErrNotRegular):
		return refuse("it is " + fsafe.Kind(t.Info.Mode()) + ", not a regular file")
	case err != nil:
		return fmt.Errorf("check snapshot path %s: %w", out, err)
	}
	d, err := os.Stat(t.Dir)
	if err != nil {
		return fmt.Errorf("check snapshot path %s: %w", out, err)
	}
	if !d.IsDir() {
		return refuse(t.Dir + " is not a directory")
	}
	if uid, _, ok := fsafe.Owner(d); ok && recorded && dbUID >= 0 && os.Geteuid() != dbUID && uid != dbUID {
		return refuse(fmt.Sprintf("the database records it as the source's snapshot, but its directory %s is owned by %s, not by %s, who owns the database: "+
			"run the job as %s, or have the app save its snapshot in a directory %s owns", t.Dir, userName(uid), userName(dbUID), userName(dbUID), userName(dbUID)))
	}
	if t.Info != nil {
		h, err := snapshot.ReadHeader(t.File)
		switch {
		case errors.Is(err, snapshot.ErrNotSnapshot), errors.Is(err, snapshot.ErrTruncated) && t.Info.Size() < int64(len(snapshot.Magic)):
			return refuse("the existing file is not a snapshot, and --all never replaces such a file, --force or not")
		case errors.Is(err, fs.ErrNotExist):
		case err == nil && h.DatasetID != ds && !force:
			return refuse(fmt.Sprintf("the existing file is the snapshot of another dataset, %x (written %s), not of this source's, %x: "+
				"delete it, or pass --force to replace it", h.DatasetID, h.Created.UTC().Format(time.RFC3339), ds))
		}
	}
	probe, err := fsafe.CreateTemp(t.Dir, filepath.Base(t.File), 0o600)
	if err != nil {
		return fmt.Errorf("check snapshot path %s: cannot create files in %s: %w", out, t.Dir, err)
	}
	_ = probe.Close()
	_ = os.Remove(probe.Name())
	return nil
}
