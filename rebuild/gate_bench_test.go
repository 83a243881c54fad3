package rebuild

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	rtmetrics "runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// The benchmarks compare the gate with what a user writes without the
// library, in the same run, on a 1M-row table of 36-byte ids:
//
//	go test -run '^$' -bench 'Missing|Fetched|Rebuild' -benchtime 10x ./rebuild
//
// Results, machine and command: docs/BENCHMARKS.md.

const benchRows = 1_000_000

var (
	benchOnce sync.Once
	benchPath string
	benchErr  error
)

// benchID is the i-th id of the benchmark table: a splitmix64 scramble in
// UUID shape. Ids i >= benchRows are not in the table.
func benchID(i uint64) string {
	mix := func(x uint64) uint64 {
		x += 0x9e3779b97f4a7c15
		x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
		x = (x ^ x>>27) * 0x94d049bb133111eb
		return x ^ x>>31
	}
	var b [16]byte
	a, c := mix(i), mix(i^0xa5a5a5a5a5a5a5a5)
	for j := 0; j < 8; j++ {
		b[j], b[8+j] = byte(a>>(8*j)), byte(c>>(8*j))
	}
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// benchDB builds the 1M-row table once per test binary run.
func benchDB(b *testing.B) string {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "syncfilter-bench")
		if err != nil {
			benchErr = err
			return
		}
		benchPath = filepath.Join(dir, "bench.db")
		db, err := testdriver.Open(benchPath, testdriver.App{JournalMode: "WAL", BusyTimeout: 10 * time.Second})
		if err != nil {
			benchErr = err
			return
		}
		defer db.Close()
		if _, err := db.Exec(`CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`); err != nil {
			benchErr = err
			return
		}
		tx, _ := db.Begin()
		st, _ := tx.Prepare(`INSERT INTO records (id, body) VALUES (?, 'payload')`)
		for i := uint64(0); i < benchRows; i++ {
			if _, err := st.Exec(benchID(i)); err != nil {
				benchErr = err
				return
			}
		}
		_ = st.Close()
		benchErr = tx.Commit()
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchPath
}

// TestMain removes the benchmark database and closes the descriptors
// the tests read database files through (heldOpen).
func TestMain(m *testing.M) {
	code := m.Run()
	closeHeld()
	if benchPath != "" {
		_ = os.RemoveAll(filepath.Dir(benchPath))
	}
	os.Exit(code)
}

// page returns 10,000 ids, newPct percent of them not in the table,
// interleaved. Page p of a run uses other ids than page p-1.
func benchPage(p int, newPct int) []string {
	const size = 10_000
	out := make([]string, size)
	for i := range out {
		n := uint64(p*size + i)
		if i%100 < newPct {
			out[i] = benchID(benchRows + n) // new
		} else {
			out[i] = benchID(n * 7919 % benchRows) // already fetched
		}
	}
	return out
}

// benchIndex opens the gate on the benchmark table, serving from its
// snapshot (built by the first open).
func benchIndex(b *testing.B, path string) *Index {
	ix, err := Open(context.Background(), DBConfig{Path: path, Driver: testdriver.Driver()}, Source{Table: "records", Column: "id", Snapshot: path + ".sfb"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ix.Close(context.Background()) })
	if err := ix.Wait(context.Background()); err != nil {
		b.Fatal(err)
	}
	return ix
}

// preparedLookup is what a user writes without the library.
func preparedLookup(b *testing.B, path string) *sql.Stmt {
	db, err := testdriver.Open(path, testdriver.App{BusyTimeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	stmt, err := db.Prepare(`SELECT 1 FROM records WHERE id = ?`)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stmt.Close(); _ = db.Close() })
	return stmt
}

// BenchmarkMissing asks for the missing ids of pages of 10,000, with 90%,
// 50% and 0% of them new, through the gate and with a SELECT per id.
func BenchmarkMissing(b *testing.B) {
	path := benchDB(b)
	for _, newPct := range []int{90, 50, 0} {
		pages := make([][]string, 16)
		for p := range pages {
			pages[p] = benchPage(p, newPct)
		}
		b.Run(fmt.Sprintf("new=%d%%/syncfilter", newPct), func(b *testing.B) {
			ix := benchIndex(b, path)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				missing, err := ix.Missing(context.Background(), pages[i%len(pages)])
				if err != nil {
					b.Fatal(err)
				}
				if n := countTrue(missing); n != len(pages[0])*newPct/100 {
					b.Fatalf("%d missing, want %d", n, len(pages[0])*newPct/100)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pages[0])), "ns/key")
		})
		b.Run(fmt.Sprintf("new=%d%%/prepared-select", newPct), func(b *testing.B) {
			stmt := preparedLookup(b, path)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var missing []string
				for _, id := range pages[i%len(pages)] {
					var one int
					switch err := stmt.QueryRow(id).Scan(&one); {
					case errors.Is(err, sql.ErrNoRows):
						missing = append(missing, id)
					case err != nil:
						b.Fatal(err)
					}
				}
				if len(missing) != len(pages[0])*newPct/100 {
					b.Fatalf("%d missing, want %d", len(missing), len(pages[0])*newPct/100)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pages[0])), "ns/key")
		})
	}
}

// BenchmarkFetched asks about one new id per op: the filter answers, but
// each call first reads the generation (one small query), so the saving is
// smaller than for pages.
func BenchmarkFetched(b *testing.B) {
	path := benchDB(b)
	b.Run("new/syncfilter", func(b *testing.B) {
		ix := benchIndex(b, path)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if ok, err := ix.Fetched(context.Background(), benchID(benchRows+uint64(i))); err != nil || ok {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("new/prepared-select", func(b *testing.B) {
		stmt := preparedLookup(b, path)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			var one int
			if err := stmt.QueryRow(benchID(benchRows + uint64(i))).Scan(&one); !errors.Is(err, sql.ErrNoRows) {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRebuild times a full rebuild of the 1M-row table against a bare
// database/sql scan of the same column, and reports the rebuild's peak
// heap above the heap before it, next to the filter's size.
func BenchmarkRebuild(b *testing.B) {
	path := benchDB(b)
	open := func(b *testing.B) *Index {
		ix, err := Open(context.Background(), DBConfig{Path: path, Driver: testdriver.Driver()}, Source{Table: "records", Column: "id", NoAutoRebuild: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = ix.Close(context.Background()) })
		return ix
	}
	b.Run("syncfilter", func(b *testing.B) {
		ix := open(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			runtime.GC() // as for the bare scan: each run starts from a collected heap
			b.StartTimer()
			if err := ix.Rebuild(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(serving(ix).F.Params().Bytes())/(1<<20), "filter-MiB")
	})
	// The same rebuild with the heap sampled every millisecond (the
	// sampling costs time of its own, so it is not part of the timing
	// above).
	b.Run("syncfilter-peak-heap", func(b *testing.B) {
		ix := open(b)
		var peak uint64
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			runtime.GC()
			base := heapBytes()
			stop := sampleHeap(base, &peak)
			b.StartTimer()
			if err := ix.Rebuild(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			stop()
			b.StartTimer()
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(serving(ix).F.Params().Bytes())/(1<<20), "filter-MiB")
	})
	b.Run("bare-scan", func(b *testing.B) {
		db, err := testdriver.Open(path, testdriver.App{BusyTimeout: 10 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			runtime.GC()
			b.StartTimer()
			rows, err := db.Query(`SELECT id FROM records`)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					b.Fatal(err)
				}
				n++
			}
			if err := rows.Close(); err != nil || n != benchRows {
				b.Fatalf("%d rows, %v", n, err)
			}
		}
	})
}

func heapBytes() uint64 {
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64()
}

// sampleHeap records, every millisecond until stopped, the heap above
// base into *peak (keeping the maximum).
func sampleHeap(base uint64, peak *uint64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			if h := heapBytes(); h > base && h-base > *peak {
				*peak = h - base
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// countTrue counts the positions Missing answered missing.
func countTrue(missing []bool) int {
	n := 0
	for _, m := range missing {
		if m {
			n++
		}
	}
	return n
}
