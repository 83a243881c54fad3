package bench

import (
	"context"
	"testing"

	"github.com/bits-and-blooms/bloom/v3"
	"golang.org/x/text/unicode/norm"

	"github.com/syncfilter/syncfilter/syncfilter"
)

// singleN is the number of keys in the filters of BenchmarkSingle.
const singleN = 1_000_000

// coldCount is how many drawn query keys a single-key benchmark cycles
// through: far more than any cache holds of the filter's lines.
const coldCount = 1 << 20

// shapePair returns both filters holding singleN keys of shape s.
func shapePair(b *testing.B, s shape) *pair {
	pairsMu.Lock()
	defer pairsMu.Unlock()
	id := uint64(len(s.name))<<56 | singleN // a cache slot per shape
	if p := pairs[id]; p != nil && p.name == s.name {
		return p
	}
	params, err := syncfilter.NewParams(singleN, fpr)
	if err != nil {
		b.Fatal(err)
	}
	sf, err := syncfilter.New(params)
	if err != nil {
		b.Fatal(err)
	}
	bb := bloom.NewWithEstimates(singleN, fpr)
	batch := make([]string, 0, 4096)
	for i := uint64(0); i < singleN; i++ {
		k := s.key(i)
		bb.AddString(norm.NFC.String(k))
		if batch = append(batch, k); len(batch) == cap(batch) || i == singleN-1 {
			if err := sf.AddBatch(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	p := &pair{sf: sf, bb: bb, name: s.name}
	pairs[id] = p
	return p
}

// BenchmarkSingle is one MightContain per op against what a cache user
// writes instead: NFC-normalize the key (norm.NFC.String, which returns
// the string itself when it is already NFC), then bits-and-blooms'
// TestString. Both filters hold 1M keys of the shape at 1%; the queries
// are drawn at random over twice that key space (half inserted), so every
// query lands on a random part of the filter, as a cache's requests do.
func BenchmarkSingle(b *testing.B) {
	for _, s := range shapes {
		q := coldQueries(s.key, singleN, coldCount)
		b.Run(s.name+"/syncfilter", func(b *testing.B) {
			f := shapePair(b, s).sf
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sink, _ = f.MightContain(q[i&(coldCount-1)])
			}
		})
		b.Run(s.name+"/bitsandblooms+nfc", func(b *testing.B) {
			f := shapePair(b, s).bb
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sink = f.TestString(norm.NFC.String(q[i&(coldCount-1)]))
			}
		})
	}
}

// BenchmarkSingleAdd is one Add per op through the filter's writer
// goroutine (the key hashed by the caller, its bits set by the writer, the
// call returning once they are): the single-insert latency. The
// bits-and-blooms figure (NFC, then AddString, no writer and no
// concurrency safety) is for scale.
func BenchmarkSingleAdd(b *testing.B) {
	for _, s := range shapes {
		keys := coldQueries(s.key, singleN, coldCount)
		b.Run(s.name+"/syncfilter", func(b *testing.B) {
			params, err := syncfilter.NewParams(singleN, fpr)
			if err != nil {
				b.Fatal(err)
			}
			f, err := syncfilter.New(params)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := f.Add(ctx, keys[i&(coldCount-1)]); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(s.name+"/bitsandblooms+nfc", func(b *testing.B) {
			f := bloom.NewWithEstimates(singleN, fpr)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				f.AddString(norm.NFC.String(keys[i&(coldCount-1)]))
			}
		})
	}
}
