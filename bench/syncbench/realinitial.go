package syncbench

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// InitialConfig is the real loop's initial sync: an empty table (no
// snapshot yet) filled to rows by pages of page new random UUIDs, one
// process, no events.
func InitialConfig(driver string, rows int64, page int, wait WaitSpec, seed uint64) RealConfig {
	return RealConfig{
		PagesConfig: PagesConfig{Seed: seed, Kinds: []string{KindAllNew}, MinSize: page, MaxSize: page},
		Driver:      driver, Pages: int(rows / int64(page)), Wait: wait,
		AddColumnAt: -1, RebuildAt: -1, RestartAt: -1,
	}
}

// WriteInitialTable writes the initial syncs' Markdown table: the median
// of the twins' per-page ratios (TwinsNote), and how many pages the
// filter answered with a false-positive rate above twice its target
// (measured: the maybes SQLite refuted ÷ the page's ids, all new; and
// estimated from its bits), in the library-first twin.
func WriteInitialTable(w io.Writer, twins []*RealTwins) error {
	var errs []error
	p := func(format string, args ...any) {
		_, err := fmt.Fprintf(w, format+"\n", args...)
		errs = append(errs, err)
	}
	p("| rows | page | wait | after | pages | library ÷ IN-list (median of pages) | p10 – p90 | total library ÷ total IN-list | pages over 2× target FPR (measured) | (estimated) | pages in bypass |")
	p("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, t := range twins {
		pages := t.Pages()
		if len(pages) == 0 || len(t.Lib.Children) == 0 {
			continue
		}
		target := t.Lib.Children[0].Start.TargetFPR
		var lib, in []time.Duration
		for _, pg := range pages {
			lib, in = append(lib, pg.Lib), append(in, pg.InList)
		}
		measured, estimated, bypass := 0, 0, 0
		for _, pg := range t.Lib.Pages() {
			if pg.Bypass > 0 || !pg.Serving {
				bypass++
				continue
			}
			if float64(pg.FalsePos) > 2*target*float64(pg.New) {
				measured++
			}
			if pg.EstFPR > 2*target {
				estimated++
			}
		}
		rs := ratios(pages)
		rows := t.Config.Pages * t.Config.MaxSize
		p("| %s | %s | %v | %v | %d | %.2f× | %.2f – %.2f | %.2f× | %d | %d | %d |", thousands(fmt.Sprint(rows)), thousands(fmt.Sprint(t.Config.MaxSize)),
			t.Config.Wait, t.Config.After, len(pages), Quantile(rs, 0.5), Quantile(rs, 0.1), Quantile(rs, 0.9), Ratio(Sum(lib), Sum(in)), measured, estimated, bypass)
	}
	return errors.Join(errs...)
}
