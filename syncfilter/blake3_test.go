package syncfilter

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/zeebo/blake3"
)

// referenceSum is keyed BLAKE3-256 straight from github.com/zeebo/blake3.
func referenceSum(t testing.TB, key [32]byte, s string) [32]byte {
	t.Helper()
	h, err := blake3.NewKeyed(key[:])
	if err != nil {
		t.Fatal(err)
	}
	_, _ = h.WriteString(s)
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

func TestKeyedSumMatchesReferenceAtEveryShortLength(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 20; trial++ {
		var key [32]byte
		for i := range key {
			key[i] = byte(r.Uint32())
		}
		h := newKeyHasher(key)
		for n := 0; n <= 200; n++ {
			buf := make([]byte, n)
			for i := range buf {
				buf[i] = byte(r.Uint32())
			}
			if got, want := h.sum(string(buf)), referenceSum(t, key, string(buf)); got != want {
				t.Fatalf("len %d: sum = %x, want %x", n, got, want)
			}
		}
	}
	// Long inputs cross chunk (1 KiB) and buffer (8 KiB) boundaries.
	h := newKeyHasher([32]byte{7})
	for _, n := range []int{1023, 1024, 1025, 8191, 8192, 8193, 65537} {
		s := strings.Repeat("x", n)
		if got, want := h.sum(s), referenceSum(t, [32]byte{7}, s); got != want {
			t.Fatalf("len %d: sum = %x, want %x", n, got, want)
		}
	}
}

// TestKeyedSumKnownAnswer pins the keyed hash to the official BLAKE3 test
// vectors (key "whats the Elvish word for friend", input byte i = i mod
// 251), first 32 bytes of the keyed_hash column.
func TestKeyedSumKnownAnswer(t *testing.T) {
	var key [32]byte
	copy(key[:], "whats the Elvish word for friend")
	h := newKeyHasher(key)
	input := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i % 251)
		}
		return string(b)
	}
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, "92b2b75604ed3c761f9d6f62392c8a9227ad0ea3f09573e783f1498a4ed60d26"},
		{1, "6d7878dfff2f485635d39013278ae14f1454b8c0a3a2d34bc1ab38228a80c95b"},
		{1023, "c951ecdf03288d0fcc96ee3413563d8a6d3589547f2c2fb36d9786470f1b9d6e"},
		{1024, "75c46f6f3d9eb4f55ecaaee480db732e6c2105546f1e675003687c31719c7ba4"},
		{1025, "357dc55de0c7e382c900fd6e320acc04146be01db6a8ce7210b7189bd664ea69"},
	} {
		got := h.sum(input(tc.n))
		if hexs := hexString(got[:]); hexs != tc.want {
			t.Errorf("len %d: %s, want %s", tc.n, hexs, tc.want)
		}
	}
}

func hexString(b []byte) string {
	var sb bytes.Buffer
	for _, c := range b {
		sb.WriteByte("0123456789abcdef"[c>>4])
		sb.WriteByte("0123456789abcdef"[c&15])
	}
	return sb.String()
}

func FuzzKeyedSumMatchesReference(f *testing.F) {
	f.Add([]byte("key material"), "3f2504e0-4f89-11d3-9a0c-0305e82c3301")
	f.Add([]byte{}, "")
	f.Fuzz(func(t *testing.T, keySeed []byte, s string) {
		var key [32]byte
		copy(key[:], keySeed)
		h := newKeyHasher(key)
		want := referenceSum(t, key, s)
		if got := h.sum(s); got != want {
			t.Fatalf("sum(%q) = %x, want %x", s, got, want)
		}
		if len(s) > blockLen {
			return
		}
		// Every single-block kernel this CPU runs, on the key's own bytes
		// (the AVX-512 kernels read exactly len(s) of them).
		for _, k := range supportedKernels() {
			var got [32]byte
			h.sumWith(k, s, &got)
			if got != want {
				t.Fatalf("kernel %s: sum(%q) = %x, want %x", kernelNames[k], s, got, want)
			}
		}
	})
}

// TestSumManyMatchesReference covers the eight-lane path (and its padding
// and fallbacks) against the scalar reference, for every mix of short and
// long keys.
func TestSumManyMatchesReference(t *testing.T) {
	t.Logf("AVX2 vector path: %v", hasAVX2)
	r := rand.New(rand.NewPCG(9, 10))
	for trial := 0; trial < 300; trial++ {
		var key [32]byte
		for i := range key {
			key[i] = byte(r.Uint32())
		}
		h := newKeyHasher(key)
		keys := make([]string, r.IntN(40))
		for i := range keys {
			n := r.IntN(66)
			if r.IntN(10) == 0 {
				n = 65 + r.IntN(200) // long keys take the other path
			}
			b := make([]byte, n)
			for j := range b {
				b[j] = byte(r.Uint32())
			}
			keys[i] = string(b)
		}
		out := make([][32]byte, len(keys))
		h.sumMany(keys, out)
		for i, k := range keys {
			if want := referenceSum(t, key, k); out[i] != want {
				t.Fatalf("trial %d key %d (len %d): %x, want %x", trial, i, len(k), out[i], want)
			}
		}
	}
}
