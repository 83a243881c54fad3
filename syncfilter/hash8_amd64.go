//go:build amd64 && !purego

package syncfilter

//go:generate go run ./internal/hash8gen -o hash8_amd64.s

// hash8AVX2 computes keyed BLAKE3 of eight single-block inputs at once:
// in[l] is input l, zero-padded to 64 bytes, lens[l] its length, and
// out[l] its 32-byte digest.
//
//go:noescape
func hash8AVX2(key *[8]uint32, in *[8][64]byte, lens *[8]uint32, out *[8][32]byte)

// hasAVX2 reports whether the CPU has AVX2 and the OS saves YMM state.
var hasAVX2 = cpu.avx2

// sum8Vector hashes eight keys of at most 64 bytes with AVX2, or reports
// false if the CPU cannot.
func (h *keyHasher) sum8Vector(keys *[8]string, out *[8][32]byte) bool {
	if !hasAVX2 {
		return false
	}
	var in [8][blockLen]byte
	var lens [8]uint32
	for l, k := range keys {
		copy(in[l][:], k)
		lens[l] = uint32(len(k))
	}
	hash8AVX2(&h.key, &in, &lens, out)
	return true
}
