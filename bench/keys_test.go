package bench

import (
	"encoding/hex"
	"strings"
)

// idKey returns the i-th 36-byte, UUID-shaped key: a splitmix64 scramble of
// i, so keys are distinct and look random.
func idKey(i uint64) string {
	var b [16]byte
	a, c := mix(i), mix(i^0xa5a5a5a5a5a5a5a5)
	for j := 0; j < 8; j++ {
		b[j], b[8+j] = byte(a>>(8*j)), byte(c>>(8*j))
	}
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// workingSet returns size query keys, half of them inserted (ids below n)
// and half never inserted, interleaved, their bytes in one contiguous
// buffer so that what is measured is the filter, not the key strings.
func workingSet(n uint64, size int) []string {
	var sb strings.Builder
	for i := 0; i < size; i++ {
		if i%2 == 0 {
			sb.WriteString(idKey(uint64(i) * (n / uint64(size)) % n))
		} else {
			sb.WriteString(idKey(n + uint64(i)))
		}
	}
	all := sb.String()
	out := make([]string, size)
	for i := range out {
		out[i] = all[36*i : 36*i+36]
	}
	return out
}
