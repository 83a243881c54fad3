// Command syncbench runs the harnesses that a `go test -bench` loop
// cannot: the real sync loop, the initial sync of an empty table, the cold
// start of fresh processes, and an idle app's CPU.
//
//	go run ./cmd/syncbench initial-sync [-pages 200] [-page 1000] [-sleep 0] [-capacity 0] [-csv pages.csv] [-no-inlist] [-no-library]
//	go run ./cmd/syncbench cold-start [-rows 1000000] [-reps 7] [-modes lib,sql] [-conds warm,cold] [-driver mattn] [-md] [-v]
//	go test -run '^$' -bench 'SyncLoop|SyncFetched' . | go run ./cmd/syncbench table
//	go run ./cmd/syncbench real [-rows 1000000] [-pages 1500] [-min 10] [-max 1000] [-fixed 10,100]
//		[-waits 0,5ms,20ms-50ms] [-after 0,0.5] [-variants mixed,all-new] [-events add-column,rebuild,restart]
//		[-crash-pages 3] [-names -1] [-unattached] [-driver mattn] [-seed 1] [-csv pages.csv] [-keep] [-v]
//	go run -tags syncfilter_ablate ./cmd/syncbench ablation [-rows 300000] [-pages 400] [-waits 0,5ms,20ms-50ms]
//		[-after 0,0.5] [-off follower,apppool,deferredload,lookup,prepare,catalog,walk] [-min 10] [-max 1000] [-v]
//	go run ./cmd/syncbench real-initial [-rows 200000] [-page 1000] [-waits 0,100ms]
//	go run ./cmd/syncbench real-single [-rows 1000000] [-ops 2000] [-waits 5ms]
//	go run ./cmd/syncbench real-collections [-rows 100000] [-n 10] [-reps 5] [-page 1000]
//	go run ./cmd/syncbench idle [-rows 200000] [-pages 50] [-idle 30s] [-driver mattn]
//	go run ./cmd/syncbench versions [-rows 100000] [-pages 150] [-sizes 0,100,10] [-waits 0,5ms] [-seeds 2]
//
// The real commands are the real sync loop and its extra rows (package
// syncbench, real*.go): each prints Markdown tables for
// docs/BENCHMARKS.md; real and real-initial run the loop in child
// processes (real-child) and print the machine. -driver modernc needs a
// binary built with -tags modernc; -driver ncruces one built with
// CGO_ENABLED=0 or -tags syncfilter_nomattn (it registers "sqlite3", as
// mattn does, and takes its place).
//
// ablation runs the real loop's mixed pages with nothing switched off in
// the library and then with each speed mechanism off in turn (children
// read SYNCFILTER_ABLATE; the binary must be built with -tags
// syncfilter_ablate), and prints the median ratios and each mechanism's
// win.
//
// table turns the sync-loop benchmarks' output into the Markdown tables
// of docs/BENCHMARKS.md.
//
// Base tables are built once and kept in $SYNCBENCH_DIR (default
// $TMPDIR/syncfilter-syncbench); see package syncbench.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"

	"github.com/syncfilter/syncfilter/bench/syncbench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "syncbench:", err)
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("want a command: initial-sync, cold-start, table, real, ablation, real-initial, real-single, real-collections, idle, versions: %w", flag.ErrHelp)
	}
	switch args[0] {
	case "initial-sync":
		return initialSync(ctx, args[1:])
	case "cold-start":
		return coldStart(ctx, args[1:])
	case "table":
		lines, err := syncbench.ParseBench(os.Stdin)
		if err != nil {
			return err
		}
		return syncbench.WriteTables(os.Stdout, lines)
	case "cold-child":
		return syncbench.ColdChild(ctx, args[1:], os.Stdout)
	case "real":
		return realLoop(ctx, args[1:])
	case "real-initial":
		return realInitial(ctx, args[1:])
	case "ablation":
		return ablation(ctx, args[1:])
	case "real-single":
		return realSingle(ctx, args[1:])
	case "real-collections":
		return realCollections(ctx, args[1:])
	case "idle":
		return idle(ctx, args[1:])
	case "versions":
		return versions(ctx, args[1:])
	case "real-child":
		return syncbench.RealChild(ctx, args[1:])
	default:
		return fmt.Errorf("unknown command %q: %w", args[0], flag.ErrHelp)
	}
}

func initialSync(ctx context.Context, args []string) error {
	var o syncbench.InitialOptions
	fs := flag.NewFlagSet("initial-sync", flag.ContinueOnError)
	fs.IntVar(&o.Pages, "pages", 200, "pages to sync (1000 for a 1M-row sync)")
	fs.IntVar(&o.PageSize, "page", 1000, "new ids per page")
	fs.DurationVar(&o.Sleep, "sleep", 0, "pause per page, standing for the network fetch")
	fs.Uint64Var(&o.Capacity, "capacity", 0, "rebuild.Source.Capacity (0: the default)")
	fs.BoolVar(&o.NoInList, "no-inlist", false, "skip the IN-list side")
	fs.BoolVar(&o.NoLibrary, "no-library", false, "never open the library (the app's INSERTs without its triggers)")
	csvPath := fs.String("csv", "", "write the per-page series to this CSV file")
	verbose := fs.Bool("v", false, "print every page")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *verbose {
		o.Progress = func(r syncbench.PageRecord) {
			fmt.Printf("page %4d missing %8.0f µs in-list %8.0f µs bypass %-5v serving %-5v rebuilding %-5v est FPR %.4f measured %.4f capacity %d\n",
				r.Page, float64(r.Missing)/1e3, float64(r.InList)/1e3, r.Bypass, r.Serving, r.Rebuilding, r.EstFPR, r.MeasuredFPR, r.Capacity)
		}
	}
	res, err := syncbench.InitialSync(ctx, o)
	if err != nil {
		return err
	}
	if *csvPath != "" {
		f, err := os.Create(*csvPath)
		if err != nil {
			return err
		}
		if err := errors.Join(res.WriteCSV(f), f.Close()); err != nil {
			return err
		}
	}
	return res.Report(os.Stdout)
}

func coldStart(ctx context.Context, args []string) error {
	var o syncbench.ColdOptions
	fs := flag.NewFlagSet("cold-start", flag.ContinueOnError)
	fs.Int64Var(&o.Rows, "rows", 1_000_000, "rows of the table")
	fs.IntVar(&o.Reps, "reps", 7, "children per condition and mode")
	fs.IntVar(&o.PageSize, "page", 1000, "ids per page (half stored)")
	modes := fs.String("modes", "lib,sql", "children to run: lib, lib-nosnap, sql (own connection), lib-pool, sql-pool (the app's pool)")
	conds := fs.String("conds", "warm,cold", "page-cache conditions: warm, cold")
	fs.StringVar(&o.Driver, "driver", "", "the app's driver for the pool modes: mattn, modernc or ncruces (default: "+syncbench.DefaultDriver().Name+")")
	md := fs.Bool("md", false, "also print a Markdown table (each mode against its baseline)")
	verbose := fs.Bool("v", false, "print every child")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.Modes, o.Conds = strings.Split(*modes, ","), strings.Split(*conds, ",")
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	o.Child = func(args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, exe, append([]string{"cold-child"}, args...)...)
	}
	if *verbose {
		o.Log = os.Stdout
	}
	res, err := syncbench.ColdStart(ctx, o)
	if err != nil {
		return err
	}
	if err := res.Report(os.Stdout); err != nil || !*md {
		return err
	}
	fmt.Println()
	return syncbench.WriteColdTable(os.Stdout, []*syncbench.ColdResult{res})
}
