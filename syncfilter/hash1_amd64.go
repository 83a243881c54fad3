//go:build amd64 && !purego

package syncfilter

import "unsafe"

//go:generate go run ./internal/hash1gen -o hash1_amd64.s

// The single-block kernels (see internal/hash1gen): keyed BLAKE3 of the
// n ≤ 64 bytes at in. The SSE4.1 and AVX2 kernels read 64 bytes at in,
// so their callers pass a zero-padded copy; the AVX-512 kernel reads
// exactly n bytes and takes the key's own bytes.

//go:noescape
func hash1SSE41(key *[8]uint32, in *byte, n uint64, out *[32]byte)

//go:noescape
func hash1AVX2(key *[8]uint32, in *byte, n uint64, out *[32]byte)

//go:noescape
func hash1AVX512(key *[8]uint32, in *byte, n uint64, out *[32]byte)

//go:noescape
func hash1Scalar(key *[8]uint32, in *byte, n uint64, out *[32]byte)

//go:noescape
func hash1ScalarAVX512(key *[8]uint32, in *byte, n uint64, out *[32]byte)

// Kernels for one block.
const (
	kernelScalar    = iota // pure Go (blake3.go)
	kernelSSE41            // row-parallel, SSE4.1
	kernelAVX2             // row-parallel, AVX2
	kernelAVX512           // row-parallel, AVX-512 rotations and masked load
	kernelGPR              // general-purpose registers, v15 in memory
	kernelGPRMasked        // kernelGPR with an AVX-512 masked load of the key
)

var kernelNames = [...]string{"scalar", "sse4.1", "avx2", "avx-512", "gpr", "gpr+avx-512-load"}

// blockKernel is the kernel sumOne uses (see bestKernel).
var blockKernel = bestKernel(cpu)

// bestKernel picks the kernel with the shortest latency for one key.
// A compression is a chain of 168 dependent additions, XORs and rotations
// whichever way it is computed, so what decides is the latency of one
// operation, which differs by CPU (-bench BlockKernelsLatency, in
// docs/BENCHMARKS.md). On Zen 5 (AMD family 26) vector operations take two
// cycles and scalar ones one, and memory renaming makes the frame-resident
// v15 of the GPR kernel free: 64 ns against 106 ns for the AVX-512 kernel.
// On Zen 4 (family 25) the AVX-512 kernel is the fastest, 72 ns against
// 86 ns for the GPR kernel with the AVX-512 load (92 without); on Intel
// the row-parallel vector kernels keep the whole state in registers.
// Measured on one EPYC of each family: later AMD families are taken to
// behave as Zen 5, and AMD without AVX-512 keeps the GPR kernel (not
// measured against the vector ones here).
func bestKernel(f cpuFeatures) int {
	switch {
	case f.zen5 && f.avx512:
		return kernelGPRMasked
	case f.zen5:
		return kernelGPR
	case f.avx512:
		return kernelAVX512
	case f.amd:
		return kernelGPR
	case f.avx2:
		return kernelAVX2
	case f.sse41:
		return kernelSSE41
	}
	return kernelGPR
}

// supportedKernels lists the kernels this CPU can run, for the tests.
func supportedKernels() []int {
	out := []int{kernelScalar}
	for k, ok := range [...]bool{kernelSSE41: cpu.sse41, kernelAVX2: cpu.avx2, kernelAVX512: cpu.avx512, kernelGPR: true, kernelGPRMasked: cpu.avx512} {
		if ok {
			out = append(out, k)
		}
	}
	return out
}

// sumOne is keyed BLAKE3 of s, len(s) ≤ 64, with the best kernel.
func (h *keyHasher) sumOne(s string, out *[32]byte) { h.sumWith(blockKernel, s, out) }

// sumWith is keyed BLAKE3 of s, len(s) ≤ 64, with the given kernel. Each
// padded kernel gets its own stack buffer in its case, so the masked
// kernels clear none, and is called directly: through a table of
// functions the buffer would escape to the heap.
func (h *keyHasher) sumWith(kernel int, s string, out *[32]byte) {
	switch kernel {
	case kernelAVX512:
		hash1AVX512(&h.key, unsafe.StringData(s), uint64(len(s)), out)
	case kernelGPRMasked:
		hash1ScalarAVX512(&h.key, unsafe.StringData(s), uint64(len(s)), out)
	case kernelGPR:
		var buf [blockLen]byte
		copy(buf[:], s)
		hash1Scalar(&h.key, &buf[0], uint64(len(s)), out)
	case kernelAVX2:
		var buf [blockLen]byte
		copy(buf[:], s)
		hash1AVX2(&h.key, &buf[0], uint64(len(s)), out)
	case kernelSSE41:
		var buf [blockLen]byte
		copy(buf[:], s)
		hash1SSE41(&h.key, &buf[0], uint64(len(s)), out)
	default:
		h.sumBlock(s, out)
	}
}
