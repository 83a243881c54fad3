package bench

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/bench/syncbench"
)

// BenchmarkOpenCollections: one database holding ten
// collections of $SYNCBENCH_ROWS rows each (copies of the base table,
// each with its snapshot from BuildLibSnapshot), opened as one
// collection (OpenDB, one DB.Index, its first Missing of a page of 1,000
// ids, half stored) and as ten (OpenDB, ten DB.Index, then the first
// Missing of each). Files stay in the page cache between ops. Metrics:
// open-ms is OpenDB and the Index calls, first-ms the mean first Missing
// of a collection, total-ms both.
//
//	cd bench && go test -run '^$' -bench OpenCollections -benchtime 10x -count 3 .
func BenchmarkOpenCollections(b *testing.B) {
	const n = 10
	rows := benchRows(b)
	ctx := b.Context()
	base, err := syncbench.BaseDB(ctx, syncbench.RandomUUID, rows)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "app.db")
	if err := syncbench.CopyDB(base, path); err != nil {
		b.Fatal(err)
	}
	d := syncbench.DefaultDriver()
	db, err := sql.Open(d.SQLName, d.DSN(path, "_journal_mode=WAL"))
	if err != nil {
		b.Fatal(err)
	}
	// Ten collections alike, none attached yet: coll0 is the base table
	// renamed, the others copies of it.
	for i := range n {
		q := fmt.Sprintf(`CREATE TABLE coll%d (%s TEXT PRIMARY KEY, body TEXT)`, i, syncbench.Column)
		if i == 0 {
			q = `ALTER TABLE ` + syncbench.Table + ` RENAME TO coll0`
		}
		if _, err := db.ExecContext(ctx, q); err != nil {
			b.Fatal(err)
		}
		if i > 0 {
			if _, err := db.ExecContext(ctx, fmt.Sprintf(`INSERT INTO coll%d SELECT %s, body FROM coll0 ORDER BY %[2]s`, i, syncbench.Column)); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	table := func(i int) string { return fmt.Sprintf("coll%d", i) }
	snap := func(i int) string { return filepath.Join(filepath.Dir(path), fmt.Sprintf("coll%d.sfb", i)) }
	for i := range n {
		if err := syncbench.BuildLibSnapshot(ctx, d, path, table(i), snap(i)); err != nil {
			b.Fatal(err)
		}
	}
	for _, k := range []int{1, n} {
		b.Run(fmt.Sprintf("collections=%d", k), func(b *testing.B) {
			b.ReportAllocs()
			var open, first time.Duration
			for op := 0; op < b.N; op++ {
				start := time.Now()
				db, err := syncbench.OpenLibDB(ctx, d, path, nil)
				if err != nil {
					b.Fatal(err)
				}
				ixs := make([]*syncbench.LibIndex, k)
				for i := range ixs {
					if ixs[i], err = db.Index(ctx, table(i), snap(i)); err != nil {
						b.Fatal(err)
					}
				}
				open += time.Since(start)
				for i, ix := range ixs {
					page, want := syncbench.ColdPage(rows, uint64(op*n+i), 1000)
					got, took, err := ix.Missing(ctx, page)
					first += took
					if n := count(got); err != nil || n != len(want) {
						b.Fatalf("collection %d: %d missing, %v; want %d", i, n, err, len(want))
					}
				}
				// Untimed: each snapshot loads once its first call is
				// answered; it must then serve, without a rebuild.
				b.StopTimer()
				for i, ix := range ixs {
					if err := ix.Wait(ctx); err != nil {
						b.Fatal(err)
					}
					if st := ix.Stats(); !st.Serving || st.Rebuilds != 0 {
						b.Fatalf("collection %d not served from its snapshot: %s", i, st.SnapshotError)
					}
				}
				b.StartTimer()
				if err := db.Close(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(open)/float64(b.N)/1e6, "open-ms")
			b.ReportMetric(float64(first)/float64(b.N*k)/1e6, "first-ms")
			b.ReportMetric(float64(open+first)/float64(b.N)/1e6, "total-ms")
		})
	}
}
