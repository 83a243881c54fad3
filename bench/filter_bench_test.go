package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/bits-and-blooms/bloom/v3"

	"github.com/syncfilter/syncfilter/syncfilter"
)

const fpr = 0.01

// pair is the same n keys in syncfilter and in bits-and-blooms, both sized
// for n at 1%.
type pair struct {
	sf   *syncfilter.Filter
	bb   *bloom.BloomFilter
	name string // the key shape, for BenchmarkSingle's filters
}

var (
	pairsMu sync.Mutex
	pairs   = map[uint64]*pair{}
)

func filled(b *testing.B, n uint64) *pair {
	pairsMu.Lock()
	defer pairsMu.Unlock()
	if p := pairs[n]; p != nil {
		return p
	}
	params, err := syncfilter.NewParams(n, fpr)
	if err != nil {
		b.Fatal(err)
	}
	sf, err := syncfilter.New(params)
	if err != nil {
		b.Fatal(err)
	}
	bb := bloom.NewWithEstimates(uint(n), fpr)
	batch := make([]string, 0, 4096)
	for i := uint64(0); i < n; i++ {
		k := idKey(i)
		bb.AddString(k)
		if batch = append(batch, k); len(batch) == cap(batch) || i == n-1 {
			if err := sf.AddBatch(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	p := &pair{sf: sf, bb: bb}
	pairs[n] = p
	return p
}

var sizes = []uint64{1_000_000, 10_000_000}

var sink bool

// BenchmarkQuery is one MightContain / TestString per op, normalization and
// hashing included, on a 4096-key working set (half present).
func BenchmarkQuery(b *testing.B) {
	for _, n := range sizes {
		q := workingSet(n, 4096)
		b.Run(fmt.Sprintf("n=%dM/syncfilter", n/1e6), func(b *testing.B) {
			f := filled(b, n).sf
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sink, _ = f.MightContain(q[i&4095])
			}
		})
		b.Run(fmt.Sprintf("n=%dM/bitsandblooms", n/1e6), func(b *testing.B) {
			f := filled(b, n).bb
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sink = f.TestString(q[i&4095])
			}
		})
	}
}

// BenchmarkQueryBatch answers a page of 1024 keys per op; ns/key is the
// figure to compare. bits-and-blooms has no batch call: the page is a loop.
func BenchmarkQueryBatch(b *testing.B) {
	const page = 1024
	for _, n := range sizes {
		q := workingSet(n, 4096)
		b.Run(fmt.Sprintf("n=%dM/syncfilter", n/1e6), func(b *testing.B) {
			f := filled(b, n).sf
			dst := make([]bool, 0, page)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				off := (i * page) & 4095
				dst, _ = f.MightContainBatch(dst[:0], q[off:off+page])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*page), "ns/key")
		})
		b.Run(fmt.Sprintf("n=%dM/bitsandblooms", n/1e6), func(b *testing.B) {
			f := filled(b, n).bb
			dst := make([]bool, 0, page)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				off := (i * page) & 4095
				dst = dst[:0]
				for _, k := range q[off : off+page] {
					dst = append(dst, f.TestString(k))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*page), "ns/key")
		})
	}
}

// BenchmarkInsertBatch inserts pages of 4096 distinct keys into a filter
// sized for 1M; ns/key is the figure to compare (its inverse is the
// throughput).
func BenchmarkInsertBatch(b *testing.B) {
	const n, page = 1_000_000, 4096
	keys := make([]string, n)
	for i := range keys {
		keys[i] = idKey(uint64(i))
	}
	b.Run("syncfilter", func(b *testing.B) {
		params, _ := syncfilter.NewParams(n, fpr)
		f, _ := syncfilter.New(params)
		defer f.Close()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			off := (i * page) % (n - page)
			if err := f.AddBatch(context.Background(), keys[off:off+page]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*page), "ns/key")
	})
	b.Run("bitsandblooms", func(b *testing.B) {
		f := bloom.NewWithEstimates(n, fpr)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			off := (i * page) % (n - page)
			for _, k := range keys[off : off+page] {
				f.AddString(k)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*page), "ns/key")
	})
}

// BenchmarkAccuracy reports bits per key and the measured false-positive
// rate at n = 1M, p = 1%, over 1M keys never inserted. The loop body is
// empty: the metrics are the result.
func BenchmarkAccuracy(b *testing.B) {
	const n, probes = 1_000_000, 1_000_000
	p := filled(b, n)
	absent := make([]string, probes)
	for i := range absent {
		absent[i] = idKey(1<<40 + uint64(i))
	}
	b.Run("syncfilter", func(b *testing.B) {
		ans, err := p.sf.MightContainBatch(nil, absent)
		if err != nil {
			b.Fatal(err)
		}
		fp := 0
		for _, ok := range ans {
			if ok {
				fp++
			}
		}
		for i := 0; i < b.N; i++ {
		}
		b.ReportMetric(float64(p.sf.Params().M)/n, "bits/key")
		b.ReportMetric(100*float64(fp)/probes, "fpr%")
	})
	b.Run("bitsandblooms", func(b *testing.B) {
		fp := 0
		for _, k := range absent {
			if p.bb.TestString(k) {
				fp++
			}
		}
		for i := 0; i < b.N; i++ {
		}
		b.ReportMetric(float64(p.bb.Cap())/n, "bits/key")
		b.ReportMetric(100*float64(fp)/probes, "fpr%")
	})
}
