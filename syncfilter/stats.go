package syncfilter

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// Stats describe a filter's health, for operators deciding on a rebuild.
type Stats struct {
	Items          uint64  // keys inserted, repeats included
	Distinct       uint64  // keys inserted that set at least one new bit (Filter only): a repeat counts once; a new key whose bits were all set already (a false positive at insert time) does not count
	BitsSet        uint64  // bits set to one
	FillRatio      float64 // BitsSet / m
	EstimatedFPR   float64 // expected rate for keys never inserted, from the bits
	EstimatedItems float64 // distinct keys, estimated from the bits
	Counters
}

// HealthMeter computes a filter's Stats from its words as they stream
// by, a block at a time, in constant memory: what a verifier of a large
// snapshot file uses instead of loading the bits. Feed it every word of
// the bit array, in order, then call Stats.
//
// A key never inserted lands in a uniformly random block and tests k
// uniform positions there, so with c bits set in its block it is a false
// positive with probability (c/512)^k: the mean over blocks is the
// filter's false-positive rate as it stands. Each block also yields the
// distinct-key estimate ln(1 - c/512) / (k·ln(1 - 1/512)).
type HealthMeter struct {
	params         Params
	fpr, est       [BlockBits + 1]float64
	sumFPR, sumEst float64
	ones, blocks   uint64
	partial        int // bits set in the block being fed
	inBlock        int // words of it fed so far
}

// NewHealthMeter returns a meter for a filter with parameters p.
func NewHealthMeter(p Params) *HealthMeter {
	h := &HealthMeter{params: p}
	k := float64(p.K)
	logMiss := math.Log1p(-1.0 / BlockBits)
	for c := range h.fpr {
		x := float64(c) / BlockBits
		h.fpr[c] = math.Pow(x, k)
		if c == BlockBits {
			x = (BlockBits - 0.5) / BlockBits // a full block: as good as it gets
		}
		h.est[c] = math.Log1p(-x) / (k * logMiss)
	}
	return h
}

// Write feeds the next words of the bit array.
func (h *HealthMeter) Write(words ...uint64) {
	for _, w := range words {
		h.word(w)
	}
}

func (h *HealthMeter) word(w uint64) {
	c := bits.OnesCount64(w)
	h.partial += c
	h.ones += uint64(c)
	if h.inBlock++; h.inBlock == BlockBits/64 {
		h.sumFPR += h.fpr[h.partial]
		h.sumEst += h.est[h.partial]
		h.blocks++
		h.partial, h.inBlock = 0, 0
	}
}

// Stats returns the health of the words fed so far; items is the insert
// count recorded with the filter.
func (h *HealthMeter) Stats(items uint64) Stats {
	s := Stats{Items: items, BitsSet: h.ones, EstimatedItems: h.sumEst}
	if h.blocks > 0 {
		s.FillRatio = float64(h.ones) / float64(h.blocks*BlockBits)
		s.EstimatedFPR = h.sumFPR / float64(h.blocks)
	}
	return s
}

// health scans the blocks with a HealthMeter.
func (b *bitset) health(items, ones uint64) Stats {
	h := NewHealthMeter(b.params)
	for i := range b.words {
		h.word(atomic.LoadUint64(&b.words[i]))
	}
	s := h.Stats(items)
	if b.blocks > 0 {
		s.BitsSet, s.FillRatio = ones, float64(ones)/float64(b.params.M)
	}
	return s
}
