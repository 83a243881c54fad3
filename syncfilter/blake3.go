package syncfilter

import (
	"encoding/binary"
	"math/bits"
	"sync"

	"github.com/zeebo/blake3"
)

// keyHasher computes the keyed BLAKE3-256 digest of canonical keys.
//
// Keys of at most 64 bytes (ids, the common case) fit in a single BLAKE3
// block: their digest is one compression, computed here without any state
// beyond the key words. Longer keys go through github.com/zeebo/blake3,
// with one pooled hasher per goroutine at a time. Both paths give the same
// bytes as blake3.NewKeyed(key); the tests compare them for every length.
// A keyHasher is safe for concurrent use.
type keyHasher struct {
	key  [8]uint32 // the hash key as BLAKE3 chaining-value words
	long sync.Pool // *blake3.Hasher, keyed, for keys over 64 bytes
}

func newKeyHasher(key [32]byte) *keyHasher {
	h := &keyHasher{}
	for i := range h.key {
		h.key[i] = binary.LittleEndian.Uint32(key[4*i:])
	}
	h.long.New = func() any {
		kh, err := blake3.NewKeyed(key[:])
		if err != nil {
			panic(err) // unreachable: the key is 32 bytes by type
		}
		return kh
	}
	return h
}

// sum returns the first 32 bytes of keyed BLAKE3 over s.
func (h *keyHasher) sum(s string) (out [32]byte) {
	if len(s) <= blockLen {
		h.sumOne(s, &out)
		return out
	}
	kh := h.long.Get().(*blake3.Hasher)
	kh.Reset()
	_, _ = kh.WriteString(s)
	kh.Sum(out[:0])
	h.long.Put(kh)
	return out
}

const (
	blockLen = 64 // BLAKE3 block length in bytes

	flagChunkStart = 1 << 0
	flagChunkEnd   = 1 << 1
	flagRoot       = 1 << 3
	flagKeyedHash  = 1 << 4

	iv0, iv1, iv2, iv3 = 0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A
)

// sumBlock is keyed BLAKE3 of an input of at most 64 bytes: a single chunk
// made of a single block, so the root output is one compression of the key
// words with counter 0, the input length and the flags CHUNK_START,
// CHUNK_END, ROOT and KEYED_HASH.
func (h *keyHasher) sumBlock(s string, out *[32]byte) {
	var buf [blockLen]byte
	copy(buf[:], s)
	m0 := binary.LittleEndian.Uint32(buf[0:])
	m1 := binary.LittleEndian.Uint32(buf[4:])
	m2 := binary.LittleEndian.Uint32(buf[8:])
	m3 := binary.LittleEndian.Uint32(buf[12:])
	m4 := binary.LittleEndian.Uint32(buf[16:])
	m5 := binary.LittleEndian.Uint32(buf[20:])
	m6 := binary.LittleEndian.Uint32(buf[24:])
	m7 := binary.LittleEndian.Uint32(buf[28:])
	m8 := binary.LittleEndian.Uint32(buf[32:])
	m9 := binary.LittleEndian.Uint32(buf[36:])
	m10 := binary.LittleEndian.Uint32(buf[40:])
	m11 := binary.LittleEndian.Uint32(buf[44:])
	m12 := binary.LittleEndian.Uint32(buf[48:])
	m13 := binary.LittleEndian.Uint32(buf[52:])
	m14 := binary.LittleEndian.Uint32(buf[56:])
	m15 := binary.LittleEndian.Uint32(buf[60:])

	k := &h.key
	v0, v1, v2, v3 := k[0], k[1], k[2], k[3]
	v4, v5, v6, v7 := k[4], k[5], k[6], k[7]
	v8, v9, v10, v11 := uint32(iv0), uint32(iv1), uint32(iv2), uint32(iv3)
	v12, v13 := uint32(0), uint32(0) // block counter, low and high words
	v14 := uint32(len(s))
	v15 := uint32(flagChunkStart | flagChunkEnd | flagRoot | flagKeyedHash)

	// Seven rounds; round r+1 reads the message words of round r through
	// the BLAKE3 permutation [2 6 3 10 7 0 4 13 1 11 12 5 9 14 15 8].
	// round 1
	v0, v4, v8, v12 = g(v0, v4, v8, v12, m0, m1)
	v1, v5, v9, v13 = g(v1, v5, v9, v13, m2, m3)
	v2, v6, v10, v14 = g(v2, v6, v10, v14, m4, m5)
	v3, v7, v11, v15 = g(v3, v7, v11, v15, m6, m7)
	v0, v5, v10, v15 = g(v0, v5, v10, v15, m8, m9)
	v1, v6, v11, v12 = g(v1, v6, v11, v12, m10, m11)
	v2, v7, v8, v13 = g(v2, v7, v8, v13, m12, m13)
	v3, v4, v9, v14 = g(v3, v4, v9, v14, m14, m15)
	// round 2
	v0, v4, v8, v12 = g(v0, v4, v8, v12, m2, m6)
	v1, v5, v9, v13 = g(v1, v5, v9, v13, m3, m10)
	v2, v6, v10, v14 = g(v2, v6, v10, v14, m7, m0)
	v3, v7, v11, v15 = g(v3, v7, v11, v15, m4, m13)
	v0, v5, v10, v15 = g(v0, v5, v10, v15, m1, m11)
	v1, v6, v11, v12 = g(v1, v6, v11, v12, m12, m5)
	v2, v7, v8, v13 = g(v2, v7, v8, v13, m9, m14)
	v3, v4, v9, v14 = g(v3, v4, v9, v14, m15, m8)
	// round 3
	v0, v4, v8, v12 = g(v0, v4, v8, v12, m3, m4)
	v1, v5, v9, v13 = g(v1, v5, v9, v13, m10, m12)
	v2, v6, v10, v14 = g(v2, v6, v10, v14, m13, m2)
	v3, v7, v11, v15 = g(v3, v7, v11, v15, m7, m14)
	v0, v5, v10, v15 = g(v0, v5, v10, v15, m6, m5)
	v1, v6, v11, v12 = g(v1, v6, v11, v12, m9, m0)
	v2, v7, v8, v13 = g(v2, v7, v8, v13, m11, m15)
	v3, v4, v9, v14 = g(v3, v4, v9, v14, m8, m1)
	// round 4
	v0, v4, v8, v12 = g(v0, v4, v8, v12, m10, m7)
	v1, v5, v9, v13 = g(v1, v5, v9, v13, m12, m9)
	v2, v6, v10, v14 = g(v2, v6, v10, v14, m14, m3)
	v3, v7, v11, v15 = g(v3, v7, v11, v15, m13, m15)
	v0, v5, v10, v15 = g(v0, v5, v10, v15, m4, m0)
	v1, v6, v11, v12 = g(v1, v6, v11, v12, m11, m2)
	v2, v7, v8, v13 = g(v2, v7, v8, v13, m5, m8)
	v3, v4, v9, v14 = g(v3, v4, v9, v14, m1, m6)
	// round 5
	v0, v4, v8, v12 = g(v0, v4, v8, v12, m12, m13)
	v1, v5, v9, v13 = g(v1, v5, v9, v13, m9, m11)
	v2, v6, v10, v14 = g(v2, v6, v10, v14, m15, m10)
	v3, v7, v11, v15 = g(v3, v7, v11, v15, m14, m8)
	v0, v5, v10, v15 = g(v0, v5, v10, v15, m7, m2)
	v1, v6, v11, v12 = g(v1, v6, v11, v12, m5, m3)
	v2, v7, v8, v13 = g(v2, v7, v8, v13, m0, m1)
	v3, v4, v9, v14 = g(v3, v4, v9, v14, m6, m4)
	// round 6
	v0, v4, v8, v12 = g(v0, v4, v8, v12, m9, m14)
	v1, v5, v9, v13 = g(v1, v5, v9, v13, m11, m5)
	v2, v6, v10, v14 = g(v2, v6, v10, v14, m8, m12)
	v3, v7, v11, v15 = g(v3, v7, v11, v15, m15, m1)
	v0, v5, v10, v15 = g(v0, v5, v10, v15, m13, m3)
	v1, v6, v11, v12 = g(v1, v6, v11, v12, m0, m10)
	v2, v7, v8, v13 = g(v2, v7, v8, v13, m2, m6)
	v3, v4, v9, v14 = g(v3, v4, v9, v14, m4, m7)
	// round 7
	v0, v4, v8, v12 = g(v0, v4, v8, v12, m11, m15)
	v1, v5, v9, v13 = g(v1, v5, v9, v13, m5, m0)
	v2, v6, v10, v14 = g(v2, v6, v10, v14, m1, m9)
	v3, v7, v11, v15 = g(v3, v7, v11, v15, m8, m6)
	v0, v5, v10, v15 = g(v0, v5, v10, v15, m14, m10)
	v1, v6, v11, v12 = g(v1, v6, v11, v12, m2, m12)
	v2, v7, v8, v13 = g(v2, v7, v8, v13, m3, m4)
	v3, v4, v9, v14 = g(v3, v4, v9, v14, m7, m13)

	binary.LittleEndian.PutUint32(out[0:], v0^v8)
	binary.LittleEndian.PutUint32(out[4:], v1^v9)
	binary.LittleEndian.PutUint32(out[8:], v2^v10)
	binary.LittleEndian.PutUint32(out[12:], v3^v11)
	binary.LittleEndian.PutUint32(out[16:], v4^v12)
	binary.LittleEndian.PutUint32(out[20:], v5^v13)
	binary.LittleEndian.PutUint32(out[24:], v6^v14)
	binary.LittleEndian.PutUint32(out[28:], v7^v15)
}

// g is the BLAKE3 quarter-round on one column or diagonal.
func g(a, b, c, d, mx, my uint32) (uint32, uint32, uint32, uint32) {
	a += b + mx
	d = bits.RotateLeft32(d^a, -16)
	c += d
	b = bits.RotateLeft32(b^c, -12)
	a += b + my
	d = bits.RotateLeft32(d^a, -8)
	c += d
	b = bits.RotateLeft32(b^c, -7)
	return a, b, c, d
}
