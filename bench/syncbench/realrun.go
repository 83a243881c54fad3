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
	"strconv"
	"time"
)

// RealCell is one run of the real loop and what its children measured.
type RealCell struct {
	Variant  string // what the pages are: "mixed", "all-new", …
	Config   RealConfig
	Prepare  time.Duration // copying the table, storing the names, BuildSnapshot
	Children []RealChildReport
}

// Pages returns every page of the run, in order.
func (c *RealCell) Pages() []RealPage {
	var out []RealPage
	for _, ch := range c.Children {
		out = append(out, ch.Pages...)
	}
	return out
}

// RealRunner starts the children of real-loop runs.
type RealRunner struct {
	// Child returns the command that runs RealChild with args.
	Child func(args ...string) *exec.Cmd
	Log   io.Writer // a line per child, if set
	Keep  bool      // keep each run's files (in CacheDir, real-*)
	// AfterPrepare, if set, runs between the preparation and the first
	// child (tests change the table behind the reference's back).
	AfterPrepare func(RealConfig) error
}

// runDir resolves the app's driver named driver, checks that the
// library runs with it and makes a directory of the run's own under
// CacheDir, named after prefix (remove it when done). what names the
// run in errors.
func runDir(driver, prefix, what string) (Driver, string, error) {
	d, err := DriverNamed(driver)
	if err != nil {
		return Driver{}, "", err
	}
	if err := CheckLibDriver(d); err != nil {
		return Driver{}, "", err
	}
	if err := os.MkdirAll(CacheDir(), 0o755); err != nil {
		return Driver{}, "", fmt.Errorf("%s: %w", what, err)
	}
	dir, err := os.MkdirTemp(CacheDir(), prefix)
	if err != nil {
		return Driver{}, "", fmt.Errorf("%s: %w", what, err)
	}
	return d, dir, nil
}

// realCopy prepares, in dir, a copy of the base table of rows with its
// snapshot (prepareReal) and opens the app's pool on it.
func realCopy(ctx context.Context, d Driver, dir string, rows int64) (RealConfig, *AppPool, error) {
	cfg := RealConfig{PagesConfig: PagesConfig{Rows: rows}, DB: filepath.Join(dir, "app.db"), Snapshot: filepath.Join(dir, "app.db.sfb")}
	if err := prepareReal(ctx, d, cfg); err != nil {
		return cfg, nil, err
	}
	pool, err := OpenAppPool(ctx, d, cfg.DB)
	return cfg, pool, err
}

// Run prepares a copy of the app's database for cfg (its DB and
// Snapshot are set here) and runs cfg's segments, one child each, in
// order: a child that fails fails the run, with its message.
func (rr RealRunner) Run(ctx context.Context, variant string, cfg RealConfig) (_ *RealCell, err error) {
	d, dir, err := runDir(cfg.Driver, "real-", "real loop")
	if err != nil {
		return nil, err
	}
	if !rr.Keep {
		defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	}
	cfg.DB, cfg.Snapshot = filepath.Join(dir, "app.db"), filepath.Join(dir, "app.db.sfb")
	cell := &RealCell{Variant: variant, Config: cfg}
	start := time.Now()
	if err := prepareReal(ctx, d, cfg); err != nil {
		return nil, err
	}
	cell.Prepare = time.Since(start)
	if rr.AfterPrepare != nil {
		if err := rr.AfterPrepare(cfg); err != nil {
			return nil, err
		}
	}
	cfgPath := filepath.Join(dir, "config.json")
	if err := writeJSON(cfgPath, cfg); err != nil {
		return nil, err
	}
	for i, seg := range cfg.Segments() {
		rep, err := rr.child(ctx, cfgPath, filepath.Join(dir, fmt.Sprintf("child-%d.json", i)), seg, cfg.Ablate)
		if err != nil {
			return nil, fmt.Errorf("real loop %s, %s ids, wait %v, after %v, library first %v: child %d (pages %d..%d): %w", variant, cfg.SizeName(), cfg.Wait, cfg.After, cfg.LibFirst, i, seg.From, seg.To-1, err)
		}
		cell.Children = append(cell.Children, rep)
		if rr.Log != nil {
			fmt.Fprintf(rr.Log, "%s %s ids wait %v after %v off %q, %s first: child %d pages %d..%d%s: open %.1f ms, replay %.0f ms, events %d, pool connections %d\n",
				variant, cfg.SizeName(), cfg.Wait, cfg.After, cfg.Ablate, map[bool]string{true: "library", false: "IN-list"}[cfg.LibFirst],
				i, seg.From, seg.To-1, map[bool]string{true: " (exit without Close)"}[seg.Abandon],
				ms(rep.LibOpen), ms(rep.Replay), len(rep.Events), rep.PoolConns)
		}
	}
	return cell, nil
}

// prepareReal makes the app's database as the run starts: a copy of the
// cached base table of cfg.Rows random UUIDs, the Unicode names the app
// stored before (one in four in NFD), and the snapshot the cron job (or
// the app's last run) left; with no rows, an empty table and no snapshot
// (the app's first sync).
func prepareReal(ctx context.Context, d Driver, cfg RealConfig) error {
	if cfg.Rows == 0 {
		if err := createAppTable(ctx, d, cfg.DB); err != nil {
			return err
		}
	} else {
		base, err := BaseDB(ctx, RandomUUID, cfg.Rows)
		if err != nil {
			return err
		}
		if err := CopyDB(base, cfg.DB); err != nil {
			return err
		}
	}
	if cfg.Names > 0 {
		pool, err := OpenAppPool(ctx, d, cfg.DB)
		if err != nil {
			return err
		}
		_, err = pool.Store(ctx, SetupNames(cfg.Names))
		if err := errors.Join(err, pool.Close()); err != nil {
			return err
		}
	}
	if cfg.Rows == 0 || cfg.Unattached {
		return nil
	}
	return BuildLibSnapshot(ctx, d, cfg.DB, Table, cfg.Snapshot)
}

// createAppTable creates the app's empty table in a new database in WAL mode.
func createAppTable(ctx context.Context, d Driver, path string) error {
	db, err := openSQL(d, path, "_journal_mode=WAL")
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`)
	if err := errors.Join(err, db.Close()); err != nil {
		return fmt.Errorf("create app table: %w", err)
	}
	return nil
}

// child runs one segment, with EnvAblate set to ablate, and reads its
// report.
func (rr RealRunner) child(ctx context.Context, cfgPath, out string, seg Segment, ablate string) (RealChildReport, error) {
	var rep RealChildReport
	args := []string{"-config", cfgPath, "-out", out, "-from", strconv.Itoa(seg.From), "-to", strconv.Itoa(seg.To), "-mark", seg.Mark}
	if seg.Abandon {
		args = append(args, "-abandon")
	}
	cmd := rr.Child(args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = os.Stderr, &stderr
	cmd.Env = append(cmd.Environ(), EnvT0+"="+strconv.FormatInt(time.Now().UnixNano(), 10), EnvAblate+"="+ablate)
	if err := cmd.Run(); err != nil {
		return rep, fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return rep, fmt.Errorf("read child report: %w", err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return rep, fmt.Errorf("read child report: %w", err)
	}
	if rep.Ablated != ablate {
		return rep, fmt.Errorf("the child switched off %q, want %q", rep.Ablated, ablate)
	}
	if got, want := len(rep.Pages), seg.To-seg.From; got != want {
		return rep, fmt.Errorf("the child answered %d pages, want %d", got, want)
	}
	return rep, nil
}
