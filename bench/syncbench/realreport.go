package syncbench

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
)

// Quantile returns the q-quantile of xs (nearest rank), 0 for none.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(q*float64(len(s)-1) + 0.5)
	return s[i]
}

// MedianRatio returns the median of the pages' library ÷ IN-list.
func MedianRatio(pages []RealPage) float64 { return Quantile(ratios(pages), 0.5) }

func ratios(pages []RealPage) []float64 {
	out := make([]float64, len(pages))
	for i, p := range pages {
		out[i] = p.Ratio()
	}
	return out
}

func dur(d time.Duration) string { return micros(float64(d) / 1e3) }

// WriteRealTables writes the real loop's Markdown tables: the medians by
// kind of page for each run (the special pages left out), then the
// special pages one by one.
func WriteRealTables(w io.Writer, cells []*RealCell) error {
	var errs []error
	p := func(format string, args ...any) {
		_, err := fmt.Fprintf(w, format+"\n", args...)
		errs = append(errs, err)
	}
	p("| run | wait | kind | pages | library | IN-list | library ÷ IN-list (median of pages) | p10 – p90 | pages in bypass |")
	p("|---|---|---|---:|---:|---:|---:|---:|---:|")
	for _, c := range cells {
		all := c.Pages()
		plain := slices.DeleteFunc(slices.Clone(all), func(pg RealPage) bool { return pg.Mark != "" })
		for _, kind := range append(c.Config.kinds(), "all") {
			var ps []RealPage
			for _, pg := range plain {
				if kind == "all" || pg.Kind == kind {
					ps = append(ps, pg)
				}
			}
			if len(ps) == 0 || kind == "all" && len(c.Config.kinds()) == 1 {
				continue
			}
			var lib, in []time.Duration
			bypass := 0
			for _, pg := range ps {
				lib, in = append(lib, pg.Lib), append(in, pg.InList)
				if pg.Bypass > 0 {
					bypass++
				}
			}
			rs := ratios(ps)
			p("| %s | %v | %s | %d | %s | %s | %.2f× | %.2f – %.2f | %d |", c.Variant, c.Config.Wait, kind, len(ps),
				dur(Median(lib)), dur(Median(in)), Quantile(rs, 0.5), Quantile(rs, 0.1), Quantile(rs, 0.9), bypass)
		}
	}
	p("")
	p("| run | wait | page | what | library | IN-list | ratio | library's Open | migration took | pages in bypass from here |")
	p("|---|---|---:|---|---:|---:|---:|---:|---:|---:|")
	for _, c := range cells {
		all := c.Pages()
		for _, ch := range c.Children {
			for i, pg := range ch.Pages {
				if pg.Mark == "" {
					continue
				}
				open, took := "–", "–"
				if i == 0 {
					open = dur(ch.LibOpen)
				}
				for _, ev := range ch.Events {
					if ev.Page == pg.Page {
						took = dur(ev.Took)
					}
				}
				run := 0
				for _, q := range all[pg.Page:] {
					if q.Bypass == 0 {
						break
					}
					run++
				}
				p("| %s | %v | %d | %s | %s | %s | %.2f× | %s | %s | %d |", c.Variant, c.Config.Wait, pg.Page, pg.Mark,
					dur(pg.Lib), dur(pg.InList), pg.Ratio(), open, took, run)
			}
		}
	}
	return errors.Join(errs...)
}

// WriteRealCSV writes one line per page of every run.
func WriteRealCSV(w io.Writer, cells []*RealCell) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"variant", "wait", "page", "kind", "size", "new", "inlist_blind", "lib_us", "inlist_us", "ratio",
		"lib_first", "mark", "wait_us", "insert_us", "bypass", "false_pos", "serving", "est_fpr"})
	us := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) }
	for _, c := range cells {
		for _, pg := range c.Pages() {
			_ = cw.Write([]string{c.Variant, c.Config.Wait.String(), strconv.Itoa(pg.Page), pg.Kind, strconv.Itoa(pg.Size),
				strconv.Itoa(pg.New), strconv.Itoa(pg.InListBlind), us(pg.Lib), us(pg.InList), strconv.FormatFloat(pg.Ratio(), 'f', 4, 64),
				strconv.FormatBool(pg.LibFirst), pg.Mark, us(pg.Wait), us(pg.Insert), strconv.FormatUint(pg.Bypass, 10),
				strconv.FormatUint(pg.FalsePos, 10), strconv.FormatBool(pg.Serving), strconv.FormatFloat(pg.EstFPR, 'g', 4, 64)})
		}
	}
	cw.Flush()
	return cw.Error()
}
