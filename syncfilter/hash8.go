package syncfilter

// sum8 computes the keyed digests of eight canonical keys of at most 64
// bytes each: with AVX2 in one pass over eight lanes, else one by one.
func (h *keyHasher) sum8(keys *[8]string, out *[8][32]byte) {
	if h.sum8Vector(keys, out) {
		return
	}
	for i := range keys {
		h.sumOne(keys[i], &out[i])
	}
}

// sumMany computes the digests of canonical keys into out (len(out) >=
// len(keys)), gathering keys of at most 64 bytes eight at a time.
func (h *keyHasher) sumMany(keys []string, out [][32]byte) {
	var lane [8]string
	var idx [8]int
	var res [8][32]byte
	n := 0
	flush := func() {
		for i := n; i < 8; i++ { // pad: the extra lanes are computed and ignored
			lane[i] = lane[0]
		}
		h.sum8(&lane, &res)
		for i := 0; i < n; i++ {
			out[idx[i]] = res[i]
		}
		n = 0
	}
	for i, k := range keys {
		if len(k) > blockLen {
			out[i] = h.sum(k)
			continue
		}
		lane[n], idx[n] = k, i
		if n++; n == 8 {
			flush()
		}
	}
	switch {
	case n >= 3 && hasAVX2:
		flush()
	default:
		for i := 0; i < n; i++ {
			h.sumOne(lane[i], &out[idx[i]])
		}
	}
}
