package syncfilter

import "math"

// blockedFPR is the expected false-positive rate of a filter with the given
// number of 512-bit blocks after n distinct keys: a query lands in a block
// holding i keys with Poisson probability p(i) (mean λ = n/blocks), and
// then each of its k positions is set with probability s(i) = 1 - q^i,
// q = (1 - 1/512)^k; the rate is the sum of p(i)·s(i)^k over i within 12
// standard deviations of λ.
//
// Its value decides every size NewParams picks, so it is computed the
// same on every CPU (sizing_math.go): p(i) and q^i by recurrence, after
// one exp and one log for the first i.
func blockedFPR(n, blocks float64, k uint32) float64 {
	lambda := n / blocks
	switch {
	case lambda == 0:
		return 0
	case lambda >= 1<<16:
		// Every i summed is above 62,000 keys, so q^i < e^-120 and s(i)
		// rounds to 1: the sum is that of the p(i), 1. (Summing would
		// also never end once i + 1 rounds to i.)
		return 1
	}
	sd := math.Sqrt(lambda)
	lo := math.Max(0, math.Floor(lambda-float64(12*sd)-10))
	hi := math.Ceil(lambda + float64(12*sd) + 30)
	q := powUint(1-1.0/BlockBits, uint64(k))
	p := expDet(-lambda + float64(lo*logDet(lambda)) - lnFactorial(lo)) // p(lo)
	qi := powUint(q, uint64(lo))                                        // q^lo
	var sum float64
	for i := lo; i <= hi; i++ {
		sum += float64(p * powUint(1-qi, uint64(k)))
		p = p * lambda / (i + 1)
		qi *= q
	}
	return math.Min(sum, 1)
}

// plan returns the fewest blocks (and for them the fewest positions k) that
// hold n keys at a false-positive rate of at most fpr, or ok = false when
// that needs more than MaxBits.
func plan(n uint64, fpr float64) (blocks uint64, k uint32, ok bool) {
	const maxBlocks = MaxBits / BlockBits
	nf := float64(n)
	// No Bloom filter of m bits holds n keys below 0.6185^(m/n), the rate
	// at the best k (unblocked; blocking only adds): refuse at once
	// whatever is hopeless, instead of summing Poisson terms around a huge
	// mean.
	if expDet(float64(MaxBits/nf)*logDet(0.6185)) > fpr {
		return 0, 0, false
	}
	for kk := uint32(1); kk <= MaxK; kk++ {
		if blockedFPR(nf, maxBlocks, kk) > fpr {
			continue
		}
		// Smallest block count meeting fpr for this k: the rate falls as
		// blocks grow, so binary search between 1 and maxBlocks.
		lo, hi := uint64(0), uint64(maxBlocks) // rate(lo) > fpr or lo = 0; rate(hi) <= fpr
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if blockedFPR(nf, float64(mid), kk) <= fpr {
				hi = mid
			} else {
				lo = mid
			}
		}
		if !ok || hi < blocks {
			blocks, k, ok = hi, kk, true
		}
	}
	return blocks, k, ok
}
