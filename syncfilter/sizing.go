package syncfilter

import "math"

// blockedFPR is the expected false-positive rate of a filter with the given
// number of 512-bit blocks after n distinct keys: a query lands in a block
// holding i keys with Poisson probability (mean n/blocks), and then each of
// its k positions is set with probability 1 - (1 - 1/512)^(k·i).
func blockedFPR(n, blocks float64, k uint32) float64 {
	lambda := n / blocks
	kf := float64(k)
	logMiss := math.Log1p(-1.0 / BlockBits) // log of (1 - 1/512)
	sd := math.Sqrt(lambda)
	lo := math.Max(0, math.Floor(lambda-12*sd-10))
	hi := math.Ceil(lambda + 12*sd + 30)
	var sum float64
	for i := lo; i <= hi; i++ {
		lg, _ := math.Lgamma(i + 1)
		var logP float64
		if lambda > 0 {
			logP = -lambda + i*math.Log(lambda) - lg
		} else if i > 0 {
			continue
		}
		set := -math.Expm1(kf * i * logMiss) // 1 - (1-1/512)^(k i)
		sum += math.Exp(logP + kf*math.Log(set))
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
	if math.Pow(0.6185, MaxBits/nf) > fpr {
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
