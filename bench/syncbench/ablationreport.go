package syncbench

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

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
