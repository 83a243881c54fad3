package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/syncfilter/syncfilter/bench/syncbench"
)

// ablation runs the real loop with the library's speed mechanisms
// switched off one at a time (syncbench.RealRunner.Ablation).
func ablation(ctx context.Context, args []string) error {
	var rf realFlags
	var g grid
	fs := flag.NewFlagSet("ablation", flag.ContinueOnError)
	rf.register(fs)
	g.register(fs, 300_000, 400)
	off := fs.String("off", strings.Join(syncbench.Mechanisms, ","), "mechanisms to switch off, one at a time")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if g.fixed != "" {
		return errors.New("ablation: -fixed: the cells pool every run, so they take one range of sizes (-min, -max)")
	}
	if g.baseline != "in-list" {
		return errors.New("ablation: -baseline: the mechanisms are weighed against the app's IN-list only")
	}
	runs, err := g.configs(rf, []string{"mixed"})
	if err != nil {
		return err
	}
	cfgs := make([]syncbench.RealConfig, len(runs))
	for i, r := range runs {
		cfgs[i] = r.cfg
	}
	rr, err := rf.runner(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	rows, err := rr.Ablation(ctx, "mixed", cfgs, strings.Split(*off, ","))
	if err != nil {
		return err
	}
	if err := header(rows[0].Twins, rf.driver, append([]string{"ablation"}, args...)); err != nil {
		return err
	}
	fmt.Println()
	if err := syncbench.WriteAblationTables(os.Stdout, rows); err != nil {
		return err
	}
	fmt.Printf("\n%d runs of %d pages (twins), %v\n", 2*len(rows)*len(cfgs), cfgs[0].Pages, time.Since(start).Round(time.Second))
	var twins []*syncbench.RealTwins
	for _, r := range rows {
		twins = append(twins, r.Twins...)
	}
	return writeCSV(rf.csv, twins)
}
