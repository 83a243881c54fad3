package bench

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/bench/syncbench"
)

// The sync loop (issue 20, item 3): the library's Missing, one prepared
// IN-list and a prepared SELECT per id, alternating page by page in one
// loop (the side that goes first rotates), the app's INSERT of the page's
// new ids between pages, on a table of $SYNCBENCH_ROWS rows (default 1M,
// built once and cached, see syncbench.BaseDB). One op is one page; the
// per-side medians and their ratios are the reported metrics:
//
//	cd bench && go test -run '^$' -bench 'SyncLoop' -benchtime 100x -timeout 2h .
//	cd bench && go test -run '^$' -bench 'SyncFetched' -benchtime 2000x .
//
// ns/op is the whole loop (three sides and the INSERT); allocs/op too.
// lib-allocs/page and lib-B/page are Missing's own, counted around it.

// benchRows is the row count of the sync-loop tables.
func benchRows(b *testing.B) int64 {
	if s := os.Getenv("SYNCBENCH_ROWS"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			b.Fatalf("SYNCBENCH_ROWS=%q: want a positive row count", s)
		}
		return n
	}
	return 1_000_000
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func BenchmarkSyncLoop(b *testing.B) {
	rows := benchRows(b)
	for _, shape := range syncbench.Shapes {
		for _, size := range []int{100, 1000, 10_000} {
			for _, newPct := range []int{0, 50, 90, 100} {
				name := fmt.Sprintf("ids=%s/page=%d/new=%d%%", shape.Name, size, newPct)
				b.Run(name, func(b *testing.B) {
					l, err := syncbench.OpenLoop(b.Context(), shape, rows, size, newPct)
					if err != nil {
						b.Fatal(err)
					}
					defer func() {
						if err := l.Close(); err != nil {
							b.Error(err)
						}
					}()
					if l.Note != "" {
						b.Log(l.Note)
					}
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if err := l.Page(b.Context(), i); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					lib, in, per := syncbench.Median(l.Lib), syncbench.Median(l.InList), syncbench.Median(l.PerID)
					b.ReportMetric(us(lib), "lib-us/page")
					b.ReportMetric(us(in), "inlist-us/page")
					b.ReportMetric(us(per), "perid-us/page")
					b.ReportMetric(us(syncbench.Median(l.Insert)), "insert-us/page")
					b.ReportMetric(syncbench.Ratio(lib, in), "lib/inlist")
					b.ReportMetric(syncbench.Ratio(lib, per), "lib/perid")
					b.ReportMetric(syncbench.Ratio(syncbench.Sum(l.Lib), syncbench.Sum(l.InList)), "lib/inlist-sum")
					b.ReportMetric(float64(l.LibObjects)/float64(b.N), "lib-allocs/page")
					b.ReportMetric(float64(l.LibBytes)/float64(b.N), "lib-B/page")
					if st := l.Index().Stats(); st.BypassLookups > 0 || st.AutoRebuilds > 0 {
						b.Logf("the library answered %d keys in bypass; %d automatic rebuilds", st.BypassLookups, st.AutoRebuilds)
					}
				})
			}
		}
	}
}

// BenchmarkSyncFetched asks about single ids in a sync loop: per op,
// Fetched and the prepared SELECT of one stored id and of one new id (the
// four calls in a rotating order); the new id is then stored by the app,
// at once in its own transaction (store=1) or 100 at a time (store=100).
func BenchmarkSyncFetched(b *testing.B) {
	rows := benchRows(b)
	for _, shape := range syncbench.Shapes {
		for _, every := range []int{1, 100} {
			b.Run(fmt.Sprintf("ids=%s/store=%d", shape.Name, every), func(b *testing.B) {
				l, err := syncbench.OpenLoop(b.Context(), shape, rows, 1, 0)
				if err != nil {
					b.Fatal(err)
				}
				defer func() {
					if err := l.Close(); err != nil {
						b.Error(err)
					}
				}()
				if l.Note != "" {
					b.Log(l.Note)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := l.Single(b.Context(), i, every); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				fs, ss := syncbench.Median(l.FetchedStored), syncbench.Median(l.SelectStored)
				fn, sn := syncbench.Median(l.FetchedNew), syncbench.Median(l.SelectNew)
				b.ReportMetric(us(fs), "fetched-stored-us")
				b.ReportMetric(us(ss), "select-stored-us")
				b.ReportMetric(syncbench.Ratio(fs, ss), "stored-ratio")
				b.ReportMetric(us(fn), "fetched-new-us")
				b.ReportMetric(us(sn), "select-new-us")
				b.ReportMetric(syncbench.Ratio(fn, sn), "new-ratio")
			})
		}
	}
}
