package bench

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/bench/syncbench"
)

// The sync loop: the library's Missing, one prepared
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
					if st := l.Index().Stats(); st.Bypass > 0 || st.AutoRebuilds > 0 {
						b.Logf("the library answered %d keys in bypass; %d automatic rebuilds", st.Bypass, st.AutoRebuilds)
					}
				})
			}
		}
	}
}

// BenchmarkSyncFetched asks about single ids in a sync loop: per op, one
// id, stored or new at random, asked of Fetched and of the prepared SELECT
// (the first alternating); a new id is then stored by the app, at once in
// its own transaction (store=1) or 100 at a time (store=100). Medians by
// kind, over every op and split by whether the app committed just before
// (after-write) or not (quiet).
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
				for _, kind := range []struct {
					name string
					i    int
				}{{"stored", syncbench.Stored}, {"new", syncbench.New}} {
					lib, sel := l.SingleMedians(kind.i, -1)
					b.ReportMetric(us(lib), kind.name+"-fetched-us")
					b.ReportMetric(us(sel), kind.name+"-select-us")
					b.ReportMetric(syncbench.Ratio(lib, sel), kind.name+"-ratio")
					for _, after := range []struct {
						name string
						i    int
					}{{"quiet", syncbench.Quiet}, {"after-write", syncbench.AfterWrite}} {
						if len(l.Singles[kind.i][after.i].Lib) == 0 {
							continue
						}
						lib, sel := l.SingleMedians(kind.i, after.i)
						b.ReportMetric(syncbench.Ratio(lib, sel), kind.name+"-"+after.name+"-ratio")
						b.ReportMetric(us(lib), kind.name+"-"+after.name+"-fetched-us")
					}
				}
			})
		}
	}
}

// BenchmarkOpenFirstAnswer is the cold start's in-process part, repeated
// so that it can be profiled: Open on a table with a vouched snapshot, one
// Missing of a page of 1,000 ids (half stored), Close; against opening
// database/sql, preparing the IN-list and running it once. The files stay
// in the page cache; each op opens new connections. The cold start as a
// user meets it (a fresh process, files cached or not) is
// `go run ./cmd/syncbench cold-start`.
func BenchmarkOpenFirstAnswer(b *testing.B) {
	rows := benchRows(b)
	path, snap, err := syncbench.PrepareCopy(b.Context(), syncbench.RandomUUID, rows, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("lib", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			page, want := syncbench.ColdPage(rows, uint64(i), 1000)
			ix, err := syncbench.OpenLib(b.Context(), syncbench.DefaultDriver(), path, snap, nil)
			if err != nil {
				b.Fatal(err)
			}
			got, _, err := ix.Missing(b.Context(), page)
			if n := count(got); err != nil || n != len(want) {
				b.Fatalf("%d missing, %v; want %d", n, err, len(want))
			}
			// Untimed: the snapshot loads once the first call is answered;
			// it must then serve, without a rebuild.
			b.StopTimer()
			if err := ix.Wait(b.Context()); err != nil {
				b.Fatal(err)
			}
			if st := ix.Stats(); !st.Serving || st.Rebuilds != 0 {
				b.Fatalf("not served from the snapshot: %s", st.SnapshotError)
			}
			b.StartTimer()
			if err := ix.Close(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sql", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			page, want := syncbench.ColdPage(rows, uint64(i), 1000)
			in, err := syncbench.OpenInList(path)
			if err != nil {
				b.Fatal(err)
			}
			got, err := in.Missing(b.Context(), page)
			if err != nil || len(got) != len(want) {
				b.Fatalf("%d missing, %v; want %d", len(got), err, len(want))
			}
			if err := in.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// count is how many ids Missing answered missing.
func count(missing []bool) int {
	n := 0
	for _, m := range missing {
		if m {
			n++
		}
	}
	return n
}
