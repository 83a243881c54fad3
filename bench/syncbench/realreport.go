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

func ratios(pages []PairedPage) []float64 {
	out := make([]float64, len(pages))
	for i, p := range pages {
		out[i] = p.Ratio()
	}
	return out
}

func dur(d time.Duration) string { return micros(float64(d) / 1e3) }

// KindAll stands for every page of a run in the tables.
const KindAll = "all"

// kindNames are the kinds of pages as the tables name them.
var kindNames = map[string]string{
	KindResend: "re-sends", KindNewV4: "70% new UUIDv4", KindNewV7: "70% new UUIDv7", KindNames: "Unicode names",
	KindAllNew: "100% new UUIDv4", KindAll: "every page",
}

// SpecialMarks are the special pages of a run, in the order they come.
var SpecialMarks = []string{MarkFresh, MarkAddColumn, MarkRebuild, MarkFreshClosed, MarkAfterAbandon}

// markNames are the special pages as the ablation table's columns name them.
var markNames = map[string]string{
	MarkFresh: "fresh process", MarkFreshClosed: "after a Close", MarkAfterAbandon: "after an exit without Close",
	MarkAddColumn: "after ADD COLUMN", MarkRebuild: "after the 12-step rebuild", MarkNoSnapshot: "fresh process, no snapshot",
	MarkUnattached: "fresh process, a table never attached",
}

// plainOf returns the pages of kind (KindAll: every kind), special pages
// left out.
func plainOf(pages []PairedPage, kind string) []PairedPage {
	var out []PairedPage
	for _, pg := range pages {
		if pg.Mark == "" && (kind == KindAll || pg.Kind == kind) {
			out = append(out, pg)
		}
	}
	return out
}

// after9 returns the median ratio of the nine pages after position i.
func after9(pages []PairedPage, i int) float64 {
	return Quantile(ratios(pages[min(i+1, len(pages)):min(i+10, len(pages))]), 0.5)
}

// medianU returns the median of xs, 0 for none.
func medianU(xs []uint64) uint64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// TwinsNote says how the real loop's ratios are made.
const TwinsNote = "Each side is timed as the first call after the app's commit: every run is made twice with the same seed, " +
	"the library first on every page, then the IN-list first (twins); a page's ratio is the library's time from the first twin " +
	"÷ the IN-list's from the second, paired by page number. Allocations are the process's during the call (runtime.MemStats.Mallocs)."

// StoredOnlyNote says what the IN-list column holds under -baseline
// stored-only.
const StoredOnlyNote = "The IN-list side is the stored ids' IN-list here (-baseline stored-only): it binds only the page's ids it finds stored " +
	"(the first id when none is): what the app's IN-list pays for the stored ids alone, a reference point rather than a bound " +
	"(the library's statement costs less per id on big pages); no app can write it, as it would have to know the answers."

// WriteRealTables writes the real loop's Markdown tables: per run and
// kind of page, the medians and p90 of the twins' per-page ratios (the
// special pages left out); then each special page's pair.
func WriteRealTables(w io.Writer, twins []*RealTwins) error {
	var errs []error
	p := func(format string, args ...any) {
		_, err := fmt.Fprintf(w, format+"\n", args...)
		errs = append(errs, err)
	}
	p("%s", TwinsNote)
	if len(twins) > 0 && twins[0].Config.StoredOnly {
		p("")
		p("%s", StoredOnlyNote)
	}
	p("")
	p("| run | ids/page | wait | after | kind | pages | library | IN-list | library ÷ IN-list (median) | p90 | allocs/call library | IN-list | pages in bypass | IN-list blind positions |")
	p("|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, t := range twins {
		all := t.Pages()
		kinds := t.Config.kinds()
		if len(kinds) > 1 {
			kinds = append(kinds, KindAll)
		}
		for _, kind := range kinds {
			ps := plainOf(all, kind)
			if len(ps) == 0 {
				continue
			}
			var lib, in []time.Duration
			var la, ia []uint64
			bypass, blind := 0, 0
			for _, pg := range ps {
				lib, in = append(lib, pg.Lib), append(in, pg.InList)
				la, ia = append(la, pg.LibAllocs), append(ia, pg.InListAllocs)
				if pg.Bypass > 0 {
					bypass++
				}
				blind += pg.InListBlind
			}
			rs := ratios(ps)
			p("| %s | %s | %v | %v | %s | %d | %s | %s | %.2f× | %.2f× | %d | %d | %d | %d |", t.Variant, t.Config.SizeName(),
				t.Config.Wait, t.Config.After, kindNames[kind], len(ps), dur(Median(lib)), dur(Median(in)),
				Quantile(rs, 0.5), Quantile(rs, 0.9), medianU(la), medianU(ia), bypass, blind)
		}
	}
	p("")
	p("| run | ids/page | wait | after | page | what | library | IN-list | ratio | next 9 pages (median ratio) | library's Open | migration took | pages in bypass from here |")
	p("|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, t := range twins {
		all := t.Pages()
		for _, s := range specials(t, all) {
			pg := all[s.at]
			p("| %s | %s | %v | %v | %d | %s | %s | %s | %.2f× | %.2f× | %s | %s | %d |", t.Variant, t.Config.SizeName(),
				t.Config.Wait, t.Config.After, pg.Page, pg.Mark, dur(pg.Lib), dur(pg.InList), pg.Ratio(),
				after9(all, s.at), s.open, s.took, s.bypassRun)
		}
	}
	return errors.Join(errs...)
}

// special is a special page of a run, as the library-first twin saw it.
type special struct {
	at         int    // position in the run's pages
	open, took string // the library's Open before it, the migration's time ("–": none)
	bypassRun  int    // pages answered in bypass from it on
}

// specials returns the special pages of t (all: t.Pages()).
func specials(t *RealTwins, all []PairedPage) []special {
	var out []special
	at := 0
	for _, ch := range t.Lib.Children {
		for i, pg := range ch.Pages {
			if pg.Mark != "" {
				s := special{at: at + i, open: "–", took: "–"}
				if i == 0 {
					s.open = dur(ch.LibOpen)
				}
				for _, ev := range ch.Events {
					if ev.Page == pg.Page {
						s.took = dur(ev.Took)
					}
				}
				for _, q := range all[s.at:] {
					if q.Bypass == 0 {
						break
					}
					s.bypassRun++
				}
				out = append(out, s)
			}
		}
		at += len(ch.Pages)
	}
	return out
}

// WriteRealCSV writes one line per page of every pair of twins.
func WriteRealCSV(w io.Writer, twins []*RealTwins) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"variant", "sizes", "wait", "after", "off", "page", "kind", "size", "new", "mark", "lib_us", "inlist_us", "ratio",
		"lib_second_us", "inlist_second_us", "lib_allocs", "inlist_allocs", "bypass", "inlist_blind", "baseline", "inlist_ids"})
	us := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) }
	for _, t := range twins {
		for _, pg := range t.Pages() {
			_ = cw.Write([]string{t.Variant, t.Config.SizeName(), t.Config.Wait.String(), strconv.FormatFloat(t.Config.After, 'g', -1, 64),
				t.Config.Ablate, strconv.Itoa(pg.Page), pg.Kind, strconv.Itoa(pg.Size), strconv.Itoa(pg.New), pg.Mark,
				us(pg.Lib), us(pg.InList), strconv.FormatFloat(pg.Ratio(), 'f', 4, 64), us(pg.LibSecond), us(pg.InListSecond),
				strconv.FormatUint(pg.LibAllocs, 10), strconv.FormatUint(pg.InListAllocs, 10), strconv.FormatUint(pg.Bypass, 10),
				strconv.Itoa(pg.InListBlind), t.Config.Baseline(), strconv.Itoa(pg.InListIDs)})
		}
	}
	cw.Flush()
	return cw.Error()
}
