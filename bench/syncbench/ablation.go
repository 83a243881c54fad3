package syncbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// EnvAblate is what a library built with -tags syncfilter_ablate reads:
// a comma-separated list of Mechanisms to switch off.
const EnvAblate = "SYNCFILTER_ABLATE"

// Mechanisms are the library's speed mechanisms the ablation switches
// off one at a time (rebuild/ablate.go).
var Mechanisms = []string{"follower", "apppool", "budget", "deferredload", "yield", "quiet", "lookup"}

// checkAblation returns EnvAblate as this process reads it, or an error
// if it is not want or the binary's library would not read it.
func checkAblation(want string) (string, error) {
	got := os.Getenv(EnvAblate)
	if got != want {
		return got, fmt.Errorf("%s=%q, the run switches off %q", EnvAblate, got, want)
	}
	if got != "" && !AblateBuild {
		return got, fmt.Errorf("%s=%q, but this binary was built without -tags syncfilter_ablate: the library would switch nothing off", EnvAblate, got)
	}
	return got, nil
}

// AblationRow is one mechanism switched off ("": none) and its runs.
type AblationRow struct {
	Off   string
	Twins []*RealTwins
}

// Ablation runs every config of cfgs as twins with nothing switched off
// and with each mechanism of off switched off in turn, the mechanisms
// taking turns within each config so that drift spreads over them all.
func (rr RealRunner) Ablation(ctx context.Context, variant string, cfgs []RealConfig, off []string) ([]AblationRow, error) {
	if !AblateBuild {
		return nil, errors.New("ablation: this binary was built without -tags syncfilter_ablate (make syncbench-ablation)")
	}
	if v := os.Getenv(EnvAblate); v != "" {
		return nil, fmt.Errorf("ablation: %s=%q in the environment: leave it unset, the ablation sets it per child", EnvAblate, v)
	}
	for _, m := range off {
		if !slices.Contains(Mechanisms, m) {
			return nil, fmt.Errorf("ablation: no mechanism %q: want some of %s", m, strings.Join(Mechanisms, ","))
		}
	}
	rows := []AblationRow{{Off: ""}}
	for _, m := range off {
		rows = append(rows, AblationRow{Off: m})
	}
	for _, cfg := range cfgs {
		for i := range rows {
			cfg.Ablate = rows[i].Off
			tw, err := rr.Twins(ctx, variant, cfg)
			if err != nil {
				return nil, fmt.Errorf("ablation, %s off: %w", rows[i].nameOf(), err)
			}
			rows[i].Twins = append(rows[i].Twins, tw)
		}
	}
	return rows, nil
}

func (r AblationRow) nameOf() string {
	if r.Off == "" {
		return "none"
	}
	return r.Off
}

// ablationKinds and ablationMarks are the ablation tables' columns.
var (
	ablationKinds = append(slices.Clone(MixedKinds), KindAll)
	ablationMarks = []string{MarkFresh, MarkFreshClosed, MarkAfterAbandon, MarkAddColumn, MarkRebuild}
)

// cells returns the row's medians: per kind, of the per-page ratios of
// all its runs (special pages left out); per special page, of its
// pairs' ratios, one per run.
func (r AblationRow) cells() []float64 {
	var out []float64
	for _, kind := range ablationKinds {
		var ps []PairedPage
		for _, t := range r.Twins {
			ps = append(ps, plainOf(t.Pages(), kind)...)
		}
		out = append(out, Quantile(ratios(ps), 0.5))
	}
	for _, mark := range ablationMarks {
		var rs []float64
		for _, t := range r.Twins {
			for _, pg := range t.Pages() {
				if pg.Mark == mark {
					rs = append(rs, pg.Ratio())
				}
			}
		}
		out = append(out, Quantile(rs, 0.5))
	}
	return out
}

// WriteAblationTables writes the ablation's Markdown tables: the median
// ratio library ÷ IN-list per mechanism switched off and column, then
// each mechanism's win, (ratio with it off) ÷ (ratio with it on).
func WriteAblationTables(w io.Writer, rows []AblationRow) error {
	var errs []error
	p := func(format string, args ...any) {
		_, err := fmt.Fprintf(w, format+"\n", args...)
		errs = append(errs, err)
	}
	head := "| mechanism off |"
	for _, k := range ablationKinds {
		head += " " + kindNames[k] + " |"
	}
	for _, m := range ablationMarks {
		head += " " + markNames[m] + " |"
	}
	rule := "|---|" + strings.Repeat("---:|", len(ablationKinds)+len(ablationMarks))
	var runs []string
	if len(rows) > 0 {
		for _, t := range rows[0].Twins {
			runs = append(runs, fmt.Sprintf("wait %v after %v", t.Config.Wait, t.Config.After))
		}
	}
	p("%s", TwinsNote)
	p("")
	p("Median ratio library ÷ IN-list (lower is better) over the runs %s: kinds of pages, every page of the kind in every run; special pages, one pair per run.", strings.Join(runs, ", "))
	p("")
	p("%s", head)
	p("%s", rule)
	if len(rows) == 0 || rows[0].Off != "" {
		return errors.New("ablation tables: the first row must have nothing off")
	}
	cells := make([][]float64, len(rows))
	for i, r := range rows {
		cells[i] = r.cells()
		line := "| " + r.nameOf() + " |"
		for _, c := range cells[i] {
			line += fmt.Sprintf(" %.2f× |", c)
		}
		p("%s", line)
	}
	p("")
	p("Each mechanism's win: (ratio with it off) ÷ (ratio with it on, the row none); above 1, the mechanism helps.")
	p("")
	p("%s", head)
	p("%s", rule)
	for i, r := range rows {
		if r.Off == "" {
			continue
		}
		line := "| " + r.Off + " |"
		for j, c := range cells[i] {
			if cells[0][j] == 0 {
				line += " – |"
				continue
			}
			line += fmt.Sprintf(" %.2f× |", c/cells[0][j])
		}
		p("%s", line)
	}
	return errors.Join(errs...)
}
