package syncbench

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// WriteColdTable writes cold-start results as a Markdown table: for each
// row count and page-cache condition, each mode beside the mode it is
// compared with (ColdBaseline), medians of the children.
func WriteColdTable(w io.Writer, results []*ColdResult) error {
	var errs []error
	p := func(format string, args ...any) {
		_, err := fmt.Fprintf(w, format+"\n", args...)
		errs = append(errs, err)
	}
	p("| rows | page cache | child | start to first answer | baseline child | its time | ratio | child's open | child's first answer | children |")
	p("|---:|---|---|---:|---|---:|---:|---:|---:|---:|")
	for _, res := range results {
		med := res.Medians()
		for _, cond := range res.Opts.Conds {
			for _, mode := range res.Opts.Modes {
				base := ColdBaseline(mode)
				b, ok := med[[2]string{cond, base}]
				if mode == base || !ok {
					continue
				}
				var open, first []time.Duration
				for _, r := range res.Runs {
					if r.Cond == cond && r.Mode == mode {
						open, first = append(open, r.Report.Open), append(first, r.Report.First)
					}
				}
				m := med[[2]string{cond, mode}]
				p("| %s | %s | %s | %s | %s | %s | %.2f× | %s | %s | %d |", thousands(fmt.Sprint(res.Opts.Rows)), cond, mode,
					dur(m[0]), base, dur(b[0]), Ratio(m[0], b[0]), dur(Median(open)), dur(Median(first)), len(open))
			}
		}
	}
	return errors.Join(errs...)
}
