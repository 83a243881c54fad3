package syncbench

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// WriteCSV writes one line per page.
func (res *InitialResult) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"page", "rows_before", "missing_us", "inlist_us", "insert_us", "bypass", "serving",
		"rebuilding", "est_fpr", "measured_fpr", "capacity", "items", "rebuilds", "auto_rebuilds", "heap_bytes", "end_ms"})
	us := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) }
	for _, r := range res.Pages {
		_ = cw.Write([]string{
			strconv.Itoa(r.Page), strconv.FormatInt(r.RowsBefore, 10), us(r.Missing), us(r.InList), us(r.Insert),
			strconv.FormatBool(r.Bypass), strconv.FormatBool(r.Serving), strconv.FormatBool(r.Rebuilding),
			strconv.FormatFloat(r.EstFPR, 'g', 5, 64), strconv.FormatFloat(r.MeasuredFPR, 'g', 5, 64),
			strconv.FormatUint(r.Capacity, 10), strconv.FormatUint(r.Items, 10), strconv.FormatUint(r.Rebuilds, 10),
			strconv.FormatUint(r.AutoRebuilds, 10), strconv.FormatUint(r.Heap, 10),
			strconv.FormatFloat(float64(r.End)/1e6, 'f', 1, 64),
		})
	}
	cw.Flush()
	return cw.Error()
}

// Report writes the totals for a reader.
func (res *InitialResult) Report(w io.Writer) error {
	o := res.Opts
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	var errs []error
	p := func(format string, args ...any) {
		_, err := fmt.Fprintf(w, format+"\n", args...)
		errs = append(errs, err)
	}
	p("initial sync: %d pages of %d new random UUIDs, sleep %v per page, capacity %d (0 = default), library %v, in-list %v",
		o.Pages, o.PageSize, o.Sleep, o.Capacity, !o.NoLibrary, !o.NoInList)
	if o.NoLibrary {
		p("IN-list total %v; app INSERTs total %v; wall %v", res.InListTotal.Round(time.Millisecond),
			res.InsertTotal.Round(time.Millisecond), res.Wall.Round(time.Millisecond))
		return errors.Join(errs...)
	}
	p("open (first scan of the empty table): %v", res.Open.Round(time.Microsecond))
	if res.InListTotal > 0 {
		p("Missing total %v, IN-list total %v: %.2f× (target ≤ 0.5×)", res.MissingTotal.Round(time.Millisecond),
			res.InListTotal.Round(time.Millisecond), Ratio(res.MissingTotal, res.InListTotal))
	} else {
		p("Missing total %v", res.MissingTotal.Round(time.Millisecond))
	}
	p("pages with estimated FPR > 2× target (%.3g): %d of %d (target ≤ %d); measured rate > 2× target: %d",
		res.TargetFPR, res.OverFPR, len(res.Pages), len(res.Pages)/20, res.MeasuredOver)
	p("pages answered in bypass: %d; longest run %d pages, %v (last rebuild took %v)",
		res.BypassPages, res.LongestBypass, res.LongestBypassTook.Round(time.Millisecond), res.LastRebuildIn.Round(time.Millisecond))
	p("rebuilds %d (automatic %d), final capacity %d", res.Rebuilds, res.AutoRebuilds, res.FinalCap)
	p("heap objects: %.1f MiB before Open, peak %.1f MiB (+%.1f MiB); final filter (snapshot file) %.1f KiB; target peak ≤ 2× filter + 64 MiB = %.1f MiB above the base",
		mib(res.HeapBase), mib(res.HeapPeak), mib(res.HeapPeak-min(res.HeapPeak, res.HeapBase)),
		float64(res.FilterBytes)/1024, 2*mib(uint64(res.FilterBytes))+64)
	p("peak RSS %.1f MiB; app INSERTs total %v; wall %v", mib(res.PeakRSS), res.InsertTotal.Round(time.Millisecond), res.Wall.Round(time.Millisecond))
	return errors.Join(errs...)
}
