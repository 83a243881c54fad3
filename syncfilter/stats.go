package syncfilter

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// Stats describe a filter's health, for operators deciding on a rebuild.
type Stats struct {
	Items          uint64  // keys inserted, repeats included
	BitsSet        uint64  // bits set to one
	FillRatio      float64 // BitsSet / m
	EstimatedFPR   float64 // expected rate for keys never inserted, from the bits
	EstimatedItems float64 // distinct keys, estimated from the bits
	Counters
}

// health scans the blocks. A key never inserted lands in a uniformly
// random block and tests k uniform positions there, so with c bits set in
// its block it is a false positive with probability (c/512)^k: the mean
// over blocks is the filter's false-positive rate as it stands. Each block
// also yields the distinct-key estimate ln(1 - c/512) / (k·ln(1 - 1/512)).
func (b *bitset) health(items, ones uint64) Stats {
	k := float64(b.params.K)
	var fpr, est [BlockBits + 1]float64
	logMiss := math.Log1p(-1.0 / BlockBits)
	for c := range fpr {
		x := float64(c) / BlockBits
		fpr[c] = math.Pow(x, k)
		if c == BlockBits {
			x = (BlockBits - 0.5) / BlockBits // a full block: as good as it gets
		}
		est[c] = math.Log1p(-x) / (k * logMiss)
	}
	var sumFPR, sumEst float64
	for w := uint64(0); w+8 <= uint64(len(b.words)); w += 8 {
		blk, c := blockOf(b.words, w), 0
		for i := range blk {
			c += bits.OnesCount64(atomic.LoadUint64(&blk[i]))
		}
		sumFPR += fpr[c]
		sumEst += est[c]
	}
	s := Stats{Items: items, BitsSet: ones, EstimatedItems: sumEst}
	if b.blocks > 0 {
		s.FillRatio = float64(ones) / float64(b.params.M)
		s.EstimatedFPR = sumFPR / float64(b.blocks)
	}
	return s
}
