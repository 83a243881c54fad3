//go:build !amd64 || purego

package syncfilter

const (
	kernelScalar = iota
)

var kernelNames = [...]string{"scalar"}

func supportedKernels() []int { return []int{kernelScalar} }

// sumOne is keyed BLAKE3 of s, len(s) ≤ 64: the pure-Go compression.
func (h *keyHasher) sumOne(s string, out *[32]byte) { h.sumBlock(s, out) }

func (h *keyHasher) sumWith(kernel int, s string, out *[32]byte) { h.sumBlock(s, out) }
