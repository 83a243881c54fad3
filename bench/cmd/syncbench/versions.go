package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/syncfilter/syncfilter/bench/syncbench"
)

// versions runs the versions loop (syncbench/versions.go) for every seed,
// wait and page size, and prints the median ratios of the twins' first
// callers, pooled over seeds and waits, per page size and kind.
func versions(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("versions", flag.ContinueOnError)
	cfg := syncbench.VersionsConfig{Dir: syncbench.CacheDir(), Min: 10, Max: 1000, Updated: 0.05}
	fs.IntVar(&cfg.Rows, "rows", 100_000, "stored rows at the start")
	fs.IntVar(&cfg.Pages, "pages", 150, "pages per run")
	sizes := fs.String("sizes", "0,100,10", "page sizes, one run each (0: random 10–1,000)")
	waits := fs.String("waits", "0,5ms", "network waits, one run each")
	seeds := fs.Int("seeds", 2, "seeds 1..N")
	driver := fs.String("driver", syncbench.DefaultDriver().Name, "the app's SQLite driver")
	fs.BoolVar(&cfg.ByID, "by-id", false, "the library answers by id alone (Missing), against the same IN-list")
	if err := fs.Parse(args); err != nil {
		return err
	}
	d, err := syncbench.DriverNamed(*driver)
	if err != nil {
		return err
	}
	cfg.Driver = d
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return err
	}
	type cell struct{ size, kind string }
	ratios, lib := map[cell][]float64{}, map[cell][]time.Duration{}
	var order []cell
	for _, sz := range strings.Split(*sizes, ",") {
		size, err := strconv.Atoi(sz)
		if err != nil {
			return fmt.Errorf("-sizes %q: %w", sz, err)
		}
		label := "10–1,000 ids"
		if size > 0 {
			label = fmt.Sprintf("%d ids", size)
		}
		for _, w := range strings.Split(*waits, ",") {
			if cfg.Wait, err = time.ParseDuration(w); err != nil {
				return fmt.Errorf("-waits %q: %w", w, err)
			}
			for seed := 1; seed <= *seeds; seed++ {
				cfg.Fixed, cfg.Seed = size, uint64(seed)
				a, b, err := syncbench.RunVersionsTwins(ctx, cfg)
				if err != nil {
					return err
				}
				r, l := syncbench.VersionsRatios(a, b)
				for kind := range r {
					c := cell{label, kind}
					if _, ok := ratios[c]; !ok {
						order = append(order, c)
					}
					ratios[c] = append(ratios[c], r[kind]...)
					lib[c] = append(lib[c], l[kind]...)
				}
				fmt.Fprintf(os.Stderr, "size %s wait %v seed %d: every page %.2f×\n", label, cfg.Wait, seed, syncbench.Quantile(r["every page"], 0.5))
			}
		}
	}
	slices.SortStableFunc(order, func(x, y cell) int {
		if x.size != y.size {
			return 0
		}
		return strings.Compare(x.kind, y.kind)
	})
	fmt.Printf("\n| pages of | kind | median | p90 | library (median) | pages |\n|---|---|---:|---:|---:|---:|\n")
	for _, c := range order {
		fmt.Printf("| %s | %s | %.2f× | %.2f× | %.0f µs | %d |\n", c.size, c.kind, syncbench.Quantile(ratios[c], 0.5),
			syncbench.Quantile(ratios[c], 0.9), float64(syncbench.Median(lib[c]))/1e3, len(ratios[c]))
	}
	return nil
}
