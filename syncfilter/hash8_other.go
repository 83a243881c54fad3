//go:build !amd64 || purego

package syncfilter

const hasAVX2 = false

// sum8Vector reports false: there is no vector path on this platform.
func (h *keyHasher) sum8Vector(keys *[8]string, out *[8][32]byte) bool { return false }
