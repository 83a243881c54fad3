package syncfilter

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestBlockKernelsMatchReference: every single-block kernel this CPU runs
// gives zeebo/blake3's keyed digest at every length from 0 to 64, for
// random keys and inputs (hash1_linux_test.go puts inputs at the end of
// readable memory).
func TestBlockKernelsMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	kernels := supportedKernels()
	for _, k := range kernels {
		t.Logf("kernel on this CPU: %s", kernelNames[k])
	}
	for trial := 0; trial < 50; trial++ {
		var key [32]byte
		for i := range key {
			key[i] = byte(r.Uint32())
		}
		h := newKeyHasher(key)
		for n := 0; n <= blockLen; n++ {
			buf := make([]byte, n)
			for i := range buf {
				buf[i] = byte(r.Uint32())
			}
			s := string(buf)
			want := referenceSum(t, key, s)
			for _, k := range kernels {
				var got [32]byte
				h.sumWith(k, s, &got)
				if got != want {
					t.Fatalf("kernel %s, len %d: %x, want %x", kernelNames[k], n, got, want)
				}
			}
		}
	}
}

// BenchmarkBlockKernels is one keyed digest of a 36-byte id per op with
// each kernel this CPU runs.
func BenchmarkBlockKernels(b *testing.B) {
	h := newKeyHasher([32]byte{1})
	s := "3f0a9c1e-6b2d-4e8f-9a7c-5d1e2f3a4b5c"
	for _, k := range supportedKernels() {
		b.Run(kernelNames[k], func(b *testing.B) {
			var out [32]byte
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				h.sumWith(k, s, &out)
			}
		})
	}
}

// BenchmarkBlockKernelsLatency chains the digests (each input starts with
// a byte of the previous digest), so that one op is one digest's latency,
// as for a lone query, not the overlap of independent digests.
func BenchmarkBlockKernelsLatency(b *testing.B) {
	h := newKeyHasher([32]byte{1})
	buf := []byte("3f0a9c1e-6b2d-4e8f-9a7c-5d1e2f3a4b5c")
	for _, k := range supportedKernels() {
		b.Run(kernelNames[k], func(b *testing.B) {
			var out [32]byte
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				buf[0] = out[0]
				h.sumWith(k, unsafeString(buf), &out)
			}
		})
	}
}

func unsafeString(b []byte) string { return unsafe.String(&b[0], len(b)) }
