package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/syncfilter/syncfilter/bench/syncbench"
)

// The real sync loop's commands (package syncbench, real*.go).

// realFlags are the flags every real-loop command shares.
type realFlags struct {
	driver  string
	seed    uint64
	keep    bool
	verbose bool
	csv     string
}

func (f *realFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.driver, "driver", syncbench.DefaultDriver().Name, "the app's SQLite driver: mattn (cgo), modernc (a binary built with -tags modernc) or ncruces (CGO_ENABLED=0 or -tags syncfilter_nomattn)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the pages and the waits")
	fs.BoolVar(&f.keep, "keep", false, "keep each run's files (in $SYNCBENCH_DIR, real-*)")
	fs.BoolVar(&f.verbose, "v", false, "a line per child process")
	fs.StringVar(&f.csv, "csv", "", "write every page to this CSV file")
}

func (f *realFlags) runner(ctx context.Context) (syncbench.RealRunner, error) {
	exe, err := os.Executable()
	if err != nil {
		return syncbench.RealRunner{}, err
	}
	rr := syncbench.RealRunner{Keep: f.keep, Child: func(args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, exe, append([]string{"real-child"}, args...)...)
	}}
	if f.verbose {
		rr.Log = os.Stderr
	}
	return rr, nil
}

// header prints the machine table for the runs.
func header(twins []*syncbench.RealTwins, driver string, args []string) error {
	d, err := syncbench.DriverNamed(driver)
	if err != nil {
		return err
	}
	sqlite := ""
	if len(twins) > 0 && len(twins[0].Lib.Children) > 0 {
		sqlite = twins[0].Lib.Children[0].SQLite
	}
	fmt.Println()
	return syncbench.ThisMachine(d, sqlite).Write(os.Stdout, "syncbench "+strings.Join(args, " "))
}

func writeCSV(path string, twins []*syncbench.RealTwins) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(syncbench.WriteRealCSV(f, twins), f.Close())
}

func realLoop(ctx context.Context, args []string) error {
	var rf realFlags
	var g grid
	fs := flag.NewFlagSet("real", flag.ContinueOnError)
	rf.register(fs)
	g.register(fs, 1_000_000, 1500)
	variants := fs.String("variants", "mixed,all-new", "mixed: the four kinds taking turns; all-new: 100% new random UUIDs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfgs, err := g.configs(rf, strings.Split(*variants, ","))
	if err != nil {
		return err
	}
	rr, err := rf.runner(ctx)
	if err != nil {
		return err
	}
	var twins []*syncbench.RealTwins
	for _, c := range cfgs {
		tw, err := rr.Twins(ctx, c.variant, c.cfg)
		if err != nil {
			return err
		}
		twins = append(twins, tw)
	}
	if err := header(twins, rf.driver, append([]string{"real"}, args...)); err != nil {
		return err
	}
	fmt.Println()
	if err := syncbench.WriteRealTables(os.Stdout, twins); err != nil {
		return err
	}
	return writeCSV(rf.csv, twins)
}

// grid is the flags of the real loop's runs: the table, the pages, and
// the lists of waits, shares after the INSERTs and fixed page sizes whose
// every combination is a run.
type grid struct {
	cfg                          syncbench.RealConfig
	names                        int
	waits, afters, fixed, events string
	baseline                     string
}

func (g *grid) register(fs *flag.FlagSet, rows int64, pages int) {
	fs.Int64Var(&g.cfg.Rows, "rows", rows, "rows of the base table (random UUIDs)")
	fs.IntVar(&g.names, "names", -1, "Unicode names stored before the run (-1: rows/50, at least 100)")
	fs.IntVar(&g.cfg.Pages, "pages", pages, "pages per run")
	fs.IntVar(&g.cfg.MinSize, "min", 10, "fewest ids per page")
	fs.IntVar(&g.cfg.MaxSize, "max", 1000, "most ids per page")
	fs.StringVar(&g.fixed, "fixed", "", "also runs whose every page holds this many ids, one row each (e.g. 10,100)")
	fs.IntVar(&g.cfg.CrashPages, "crash-pages", 3, "pages the process that exits without Close answers")
	fs.StringVar(&g.waits, "waits", "0,5ms,20ms-50ms", "network waits per page, one run each (a range is drawn uniformly): the records' fetch, then the next page of ids (-after)")
	fs.StringVar(&g.afters, "after", "0,0.5", "shares of each wait after the app's INSERTs (the next page of ids), one run each; 0: the INSERTs come right before the next call")
	fs.StringVar(&g.baseline, "baseline", "in-list", "the other side: in-list (the app's own check), or stored-only (a reference point: the IN-list of the page's stored ids alone)")
	fs.StringVar(&g.events, "events", "add-column,rebuild,restart", "in the middle of each run, at 1/4, 1/2 and 3/4 of it (\"\": none)")
	fs.BoolVar(&g.cfg.Unattached, "unattached", false, "no snapshot, the table never attached: the first page is the first the library answers on it")
}

// gridRun is one run config of a grid, to be run as twins.
type gridRun struct {
	variant string
	cfg     syncbench.RealConfig
}

// configs returns the grid's runs: variants, then page sizes, then
// waits, then shares after the INSERTs.
func (g *grid) configs(rf realFlags, variants []string) ([]gridRun, error) {
	ws, err := syncbench.ParseWaits(g.waits)
	if err != nil {
		return nil, err
	}
	as, err := syncbench.ParseAfters(g.afters)
	if err != nil {
		return nil, err
	}
	fixed, err := syncbench.ParseSizes(g.fixed)
	if err != nil {
		return nil, err
	}
	cfg := g.cfg
	cfg.Driver, cfg.Seed = rf.driver, rf.seed
	if cfg.Names = g.names; cfg.Names < 0 {
		cfg.Names = int(max(cfg.Rows/50, 100))
	}
	switch g.baseline {
	case "in-list":
	case "stored-only":
		cfg.StoredOnly = true
	default:
		return nil, fmt.Errorf("baseline %q: want in-list or stored-only", g.baseline)
	}
	cfg.AddColumnAt, cfg.RebuildAt, cfg.RestartAt = -1, -1, -1
	for _, e := range strings.Split(g.events, ",") {
		switch e {
		case "add-column":
			cfg.AddColumnAt = cfg.Pages / 4
		case "rebuild":
			cfg.RebuildAt = cfg.Pages / 2
		case "restart":
			cfg.RestartAt = cfg.Pages * 3 / 4
		case "":
		default:
			return nil, fmt.Errorf("event %q: want add-column, rebuild, restart", e)
		}
	}
	sizes := [][2]int{{cfg.MinSize, cfg.MaxSize}}
	for _, n := range fixed {
		sizes = append(sizes, [2]int{n, n})
	}
	var out []gridRun
	for _, v := range variants {
		switch v {
		case "mixed":
			cfg.Kinds = syncbench.MixedKinds
		case "all-new":
			cfg.Kinds = []string{syncbench.KindAllNew}
		default:
			return nil, fmt.Errorf("variant %q: want mixed or all-new", v)
		}
		for _, sz := range sizes {
			cfg.MinSize, cfg.MaxSize = sz[0], sz[1]
			for _, w := range ws {
				cfg.Wait = w
				for _, a := range as {
					cfg.After = a
					out = append(out, gridRun{v, cfg})
				}
			}
		}
	}
	return out, nil
}

func realInitial(ctx context.Context, args []string) error {
	var rf realFlags
	fs := flag.NewFlagSet("real-initial", flag.ContinueOnError)
	rf.register(fs)
	rows := fs.Int64("rows", 200_000, "rows the initial sync stores")
	page := fs.Int("page", 1000, "new ids per page")
	waits := fs.String("waits", "0,100ms", "network waits per page, one run each")
	after := fs.Float64("after", 0.5, "share of each wait after the app's INSERTs (the next page of ids)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ws, err := syncbench.ParseWaits(*waits)
	if err != nil {
		return err
	}
	rr, err := rf.runner(ctx)
	if err != nil {
		return err
	}
	var twins []*syncbench.RealTwins
	for _, w := range ws {
		cfg := syncbench.InitialConfig(rf.driver, *rows, *page, w, rf.seed)
		cfg.After = *after
		tw, err := rr.Twins(ctx, "initial", cfg)
		if err != nil {
			return err
		}
		twins = append(twins, tw)
	}
	if err := header(twins, rf.driver, append([]string{"real-initial"}, args...)); err != nil {
		return err
	}
	fmt.Println()
	if err := syncbench.WriteInitialTable(os.Stdout, twins); err != nil {
		return err
	}
	return writeCSV(rf.csv, twins)
}

func realSingle(ctx context.Context, args []string) error {
	var rf realFlags
	o := syncbench.SingleOptions{}
	fs := flag.NewFlagSet("real-single", flag.ContinueOnError)
	rf.register(fs)
	fs.Int64Var(&o.Rows, "rows", 1_000_000, "rows of the base table (random UUIDs)")
	fs.IntVar(&o.Ops, "ops", 2000, "single-id calls per side")
	waits := fs.String("waits", "5ms", "waits between ops, one run each")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ws, err := syncbench.ParseWaits(*waits)
	if err != nil {
		return err
	}
	o.Driver, o.Seed = rf.driver, rf.seed
	var results []*syncbench.SingleResult
	for _, w := range ws {
		o.Wait = w
		res, err := syncbench.RealSingle(ctx, o)
		if err != nil {
			return err
		}
		results = append(results, res)
	}
	return syncbench.WriteSingleTable(os.Stdout, results)
}

func realCollections(ctx context.Context, args []string) error {
	var o syncbench.CollectionsOptions
	fs := flag.NewFlagSet("real-collections", flag.ContinueOnError)
	fs.StringVar(&o.Driver, "driver", syncbench.DefaultDriver().Name, "the app's SQLite driver")
	fs.Int64Var(&o.Rows, "rows", 100_000, "rows of each collection")
	fs.IntVar(&o.N, "n", 10, "collections in the database")
	fs.IntVar(&o.Reps, "reps", 5, "opens of one and of all, in turn")
	fs.IntVar(&o.Page, "page", 1000, "ids of each first Missing (half stored)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	res, err := syncbench.RealCollections(ctx, o)
	if err != nil {
		return err
	}
	return syncbench.WriteCollectionsTable(os.Stdout, []*syncbench.CollectionsResult{res})
}

func idle(ctx context.Context, args []string) error {
	var o syncbench.IdleOptions
	fs := flag.NewFlagSet("idle", flag.ContinueOnError)
	fs.StringVar(&o.Driver, "driver", syncbench.DefaultDriver().Name, "the app's SQLite driver")
	fs.Int64Var(&o.Rows, "rows", 200_000, "rows of the base table (random UUIDs)")
	fs.IntVar(&o.Pages, "pages", 50, "pages of the sync before the idle time")
	fs.DurationVar(&o.Idle, "idle", 30*time.Second, "how long the app stays idle with the library open")
	if err := fs.Parse(args); err != nil {
		return err
	}
	res, err := syncbench.Idle(ctx, o)
	if err != nil {
		return err
	}
	return syncbench.WriteIdleTable(os.Stdout, res)
}
