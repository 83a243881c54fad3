package syncbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// The cold start: from process start to the first
// answer for a page of ids, half of them stored, on a database with an
// existing, vouched snapshot. Each measurement is a fresh child process;
// the parent passes the wall-clock time just before it starts the child
// (EnvT0), and the child reports the time from there to its answer.

// Page-cache conditions.
const (
	CondWarm = "warm" // every file read just before the child starts
	CondCold = "cold" // the database's and snapshot's pages dropped (DropCache)
)

// ColdOptions configure a cold-start run.
type ColdOptions struct {
	Rows     int64
	Reps     int      // repetitions of every (condition, mode); default 7
	Modes    []string // default lib, sql
	Conds    []string // default warm, cold
	PageSize int      // default 1,000
	Driver   string   // the app's driver, for the pool modes (default mattn)
	// Child returns the command that runs ColdChild with args.
	Child func(args ...string) *exec.Cmd
	Log   io.Writer // one line per child, if set
}

// ColdRun is one child's measurement.
type ColdRun struct {
	Cond, Mode string
	Rep        int
	Report     ChildReport
	Wall       time.Duration // the parent's start of the child → its exit (a library child waits for its filter after its answer)
	Resident   float64       // share of the files' pages cached when it started
}

// ColdResult holds every run of a cold-start measurement.
type ColdResult struct {
	Opts  ColdOptions
	Setup string // what was prepared, and the check of the cache drop
	Runs  []ColdRun
}

// coldFiles are the files whose pages a cold start drops.
func coldFiles(db, snap string) []string {
	return []string{db, db + "-wal", db + "-shm", db + "-journal", snap}
}

// ColdStart prepares a copy of the base table of Rows random UUIDs with a
// snapshot built by ops.BuildSnapshot (kept in CacheDir as
// cold-<rows>/ and rebuilt by every run), then starts children: for each
// repetition, each condition, each mode (their order rotating).
func ColdStart(ctx context.Context, o ColdOptions) (*ColdResult, error) {
	if o.Reps == 0 {
		o.Reps = 7
	}
	if len(o.Modes) == 0 {
		o.Modes = []string{ModeLib, ModeSQL}
	}
	if len(o.Conds) == 0 {
		o.Conds = []string{CondWarm, CondCold}
	}
	if o.PageSize == 0 {
		o.PageSize = 1000
	}
	dir := filepath.Join(CacheDir(), fmt.Sprintf("cold-%d", o.Rows))
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("cold start: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cold start: %w", err)
	}
	start := time.Now()
	db, snap, err := PrepareCopy(ctx, RandomUUID, o.Rows, dir)
	if err != nil {
		return nil, err
	}
	res := &ColdResult{Opts: o}
	res.Setup = fmt.Sprintf("%d rows, copied and snapshot built by BuildSnapshot in %v", o.Rows, time.Since(start).Round(time.Millisecond))
	if slices.Contains(o.Conds, CondCold) {
		check, err := checkDrop(db)
		if err != nil {
			return nil, err
		}
		res.Setup += "; " + check
	}
	for r := 0; r < o.Reps; r++ {
		for ci := range o.Conds {
			cond := o.Conds[(r+ci)%len(o.Conds)]
			for mi := range o.Modes {
				mode := o.Modes[(r+mi)%len(o.Modes)]
				run, err := coldOnce(ctx, o, db, snap, cond, mode, r)
				if err != nil {
					return nil, err
				}
				res.Runs = append(res.Runs, run)
				if o.Log != nil {
					fmt.Fprintf(o.Log, "rep %d %s %-10s total %8.2f ms (to main %.2f, open %.2f, first answer %.2f), wall %.2f ms, cached %.0f%% %s\n",
						r, cond, mode, ms(run.Report.Total), ms(run.Report.Main), ms(run.Report.Open), ms(run.Report.First),
						ms(run.Wall), 100*run.Resident, run.Report.SnapshotError)
				}
			}
		}
	}
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// checkDrop shows that DropCache works here: the file's cached share and
// the time to read it, warm and after a drop.
func checkDrop(path string) (string, error) {
	read := func() (time.Duration, error) {
		f, err := os.Open(path)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		start := time.Now()
		_, err = io.Copy(io.Discard, f)
		return time.Since(start), err
	}
	if _, err := read(); err != nil {
		return "", fmt.Errorf("check cache drop: %w", err)
	}
	warm, err := read()
	if err != nil {
		return "", fmt.Errorf("check cache drop: %w", err)
	}
	inWarm, pages, err := Resident(path)
	if err != nil {
		return "", fmt.Errorf("check cache drop: %w", err)
	}
	if err := DropCache(path); err != nil {
		return "", err
	}
	inCold, _, err := Resident(path)
	if err != nil {
		return "", fmt.Errorf("check cache drop: %w", err)
	}
	cold, err := read()
	if err != nil {
		return "", fmt.Errorf("check cache drop: %w", err)
	}
	if inCold*10 > pages {
		return "", fmt.Errorf("check cache drop: %d of %d pages still cached after the drop", inCold, pages)
	}
	return fmt.Sprintf("drop check on the database (%d pages): cached %d warm, %d after the drop; reading it all took %v warm, %v after the drop",
		pages, inWarm, inCold, warm.Round(time.Millisecond), cold.Round(time.Millisecond)), nil
}

// coldOnce prepares the condition and runs one child.
func coldOnce(ctx context.Context, o ColdOptions, db, snap, cond, mode string, r int) (ColdRun, error) {
	run := ColdRun{Cond: cond, Mode: mode, Rep: r}
	files := coldFiles(db, snap)
	for _, f := range files {
		var err error
		switch cond {
		case CondWarm:
			err = readAll(f)
		case CondCold:
			err = DropCache(f)
		default:
			err = fmt.Errorf("condition %q: want warm or cold", cond)
		}
		if err != nil {
			return run, fmt.Errorf("cold start: %w", err)
		}
	}
	var in, total int
	for _, f := range files {
		i, n, err := Resident(f)
		if err != nil {
			return run, err
		}
		in, total = in+i, total+n
	}
	if total > 0 {
		run.Resident = float64(in) / float64(total)
	}
	args := []string{"-mode", mode, "-db", db, "-snap", snap, "-rows", strconv.FormatInt(o.Rows, 10),
		"-seed", strconv.Itoa(r), "-page", strconv.Itoa(o.PageSize)}
	if o.Driver != "" {
		args = append(args, "-driver", o.Driver)
	}
	cmd := o.Child(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	cmd.Env = append(cmd.Environ(), EnvT0+"="+strconv.FormatInt(start.UnixNano(), 10))
	if err := cmd.Start(); err != nil {
		return run, fmt.Errorf("cold start: start child: %w", err)
	}
	err := cmd.Wait()
	run.Wall = time.Since(start)
	if err != nil {
		return run, fmt.Errorf("cold start: %s child: %w: %s", mode, err, bytes.TrimSpace(stderr.Bytes()))
	}
	if err := json.Unmarshal(stdout.Bytes(), &run.Report); err != nil {
		return run, fmt.Errorf("cold start: %s child printed %q: %w", mode, stdout.String(), err)
	}
	return run, nil
}

// readAll reads a file through, so its pages are cached; a missing file
// is skipped.
func readAll(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, f)
	return err
}

// Medians returns, per condition and mode, the median time to the answer,
// and the median wall time.
func (res *ColdResult) Medians() map[[2]string][2]time.Duration {
	tot, wall := map[[2]string][]time.Duration{}, map[[2]string][]time.Duration{}
	for _, r := range res.Runs {
		k := [2]string{r.Cond, r.Mode}
		tot[k] = append(tot[k], r.Report.Total)
		wall[k] = append(wall[k], r.Wall)
	}
	out := map[[2]string][2]time.Duration{}
	for k := range tot {
		out[k] = [2]time.Duration{Median(tot[k]), Median(wall[k])}
	}
	return out
}

// Report writes the medians and the ratios to the IN-list child.
func (res *ColdResult) Report(w io.Writer) error {
	o := res.Opts
	var errs []error
	p := func(format string, args ...any) {
		_, err := fmt.Fprintf(w, format+"\n", args...)
		errs = append(errs, err)
	}
	p("cold start: %s; page of %d ids (half stored); medians of %d children each", res.Setup, o.PageSize, o.Reps)
	for _, r := range res.Runs {
		if r.Mode == ModeLib && (!r.Report.Serving || r.Report.SnapshotError != "") {
			p("  warning: rep %d %s: the library child's snapshot did not serve (snapshot: %s)", r.Rep, r.Cond, r.Report.SnapshotError)
		}
	}
	med := res.Medians()
	for _, cond := range o.Conds {
		for _, mode := range o.Modes {
			m := med[[2]string{cond, mode}]
			sql := med[[2]string{cond, ColdBaseline(mode)}][0]
			part := func(f func(ChildReport) time.Duration) float64 {
				var ds []time.Duration
				for _, r := range res.Runs {
					if r.Cond == cond && r.Mode == mode {
						ds = append(ds, f(r.Report))
					}
				}
				return ms(Median(ds))
			}
			p("  %-4s %-10s to answer %9.2f ms (%.2f× the IN-list child; to main %.2f, open %.2f, first answer %.2f), to exit %9.2f ms",
				cond, mode, ms(m[0]), Ratio(m[0], sql), part(func(r ChildReport) time.Duration { return r.Main }),
				part(func(r ChildReport) time.Duration { return r.Open }), part(func(r ChildReport) time.Duration { return r.First }), ms(m[1]))
		}
	}
	return errors.Join(errs...)
}
