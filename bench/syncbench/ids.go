package syncbench

import (
	"encoding/hex"
	"fmt"
)

// A Shape is a family of record ids, one per index i: ids below the
// table's row count are stored, ids from it upward are new, handed out in
// increasing order as the server creates records.
type Shape struct {
	Name string
	ID   func(i uint64) string
}

// The id shapes a sync engine meets.
var (
	// RandomUUID is a UUIDv4: 122 random bits, so stored and new ids are
	// spread over the whole key space and over every B-tree page.
	RandomUUID = Shape{"uuid", uuidV4}
	// TimeOrdered is UUIDv7-like: a 48-bit millisecond timestamp that
	// grows with i, then random bits, so every new id sorts after every
	// stored one and SQLite finds it absent on the hot right edge of its
	// index.
	TimeOrdered = Shape{"time", uuidV7}
)

// Shapes are the shapes of the sync-loop grid.
var Shapes = []Shape{RandomUUID, TimeOrdered}

// ShapeNamed returns the shape called name.
func ShapeNamed(name string) (Shape, error) {
	for _, s := range Shapes {
		if s.Name == name {
			return s, nil
		}
	}
	return Shape{}, fmt.Errorf("id shape %q: want uuid or time", name)
}

// mix is splitmix64's finalizer: a bijection of uint64 that looks random.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// uuidV4 returns the i-th random UUID (version 4, RFC 9562 variant).
func uuidV4(i uint64) string { return format(uuidV4Bytes(i)) }

// uuidV4Bytes returns the 16 bytes of the i-th random UUID.
func uuidV4Bytes(i uint64) [16]byte {
	var b [16]byte
	a, c := mix(i), mix(i^0xa5a5a5a5a5a5a5a5)
	for j := 0; j < 8; j++ {
		b[j], b[8+j] = byte(a>>(8*j)), byte(c>>(8*j))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return b
}

// v7Epoch is the timestamp of id 0: 2024-01-01T00:00:00Z in milliseconds.
const v7Epoch = 1_704_067_200_000

// uuidV7 returns the i-th time-ordered UUID: id i was created i
// milliseconds after v7Epoch, so ids sort (as text) in the order of i.
func uuidV7(i uint64) string {
	var b [16]byte
	ts := v7Epoch + i
	for j := 0; j < 6; j++ {
		b[j] = byte(ts >> (8 * (5 - j)))
	}
	r, s := mix(i), mix(i^0x5a5a5a5a5a5a5a5a)
	b[6] = 0x70 | byte(r)&0x0f
	b[7] = byte(r >> 8)
	b[8] = 0x80 | byte(s)&0x3f
	for j := 9; j < 16; j++ {
		b[j] = byte(s >> (8 * (j - 8)))
	}
	return format(b)
}

// format writes b in the 8-4-4-4-12 lowercase hex form.
func format(b [16]byte) string {
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
