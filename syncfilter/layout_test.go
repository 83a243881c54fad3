package syncfilter

import (
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/syncfilter/syncfilter/normalize"
)

// TestKnownAnswerPositions pins the whole derivation: hash key 00 01 … 1f,
// m = 2^20, k = 7. Any change to canonicalization, hashing, the block
// reduction or the position bits breaks it, and with it every persisted
// filter: such a change needs a new layout or hash id instead.
func TestKnownAnswerPositions(t *testing.T) {
	var key [32]byte
	for i := range key {
		key[i] = byte(i)
	}
	p := Params{Layout: LayoutBlocked512, Hash: HashBLAKE3Keyed, M: 1 << 20, K: 7, Key: key}
	img, err := NewImage(p, 0, make([]uint64, p.M/64))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key    string
		digest string
		pos    []uint64
	}{
		{"", "73492b19995d71cdb1e9d74decc09809eb732f1b00bc95c27cb15f9dd4d6478f", []uint64{0xcd7b1, 0xcd7f4, 0xcd775, 0xcd789, 0xcd60e, 0xcd6c6, 0xcd626}},
		{"a", "538b8f2a2b1a04a5d427e97de10674bb33364a790dc6452700a72cdcd695299d", []uint64{0xa51d4, 0xa5093, 0xa517a, 0xa502f, 0xa506e, 0xa51a0, 0xa50ed}},
		{"3f2504e0-4f89-11d3-9a0c-0305e82c3301", "ca8d122715b13a3bb3369f7d475f21d02064677e3027eb02b6d9cfb2ac469da2", []uint64{0x3b2b3, 0x3b39b, 0x3b367, 0x3b2ef, 0x3b3f4, 0x3b30a, 0x3b340}},
		{"caf\u00e9", "9935f6bbc3ca2dd1c65d81cdcbdef98cd50fd112f89c6fc6dc8ce3b555d0922b", []uint64{0xd13c6, 0xd12ae, 0xd1360, 0xd1379, 0xd13ec, 0xd13ce, 0xd1233}},
		{"cafe\u0301", "9935f6bbc3ca2dd1c65d81cdcbdef98cd50fd112f89c6fc6dc8ce3b555d0922b", []uint64{0xd13c6, 0xd12ae, 0xd1360, 0xd1379, 0xd13ec, 0xd13ce, 0xd1233}},
		{"\u540c\u6b65", "24fdb54b720fa6dd71949a27b0f775a9906f01cc8ef64cdeca434530c11a1cd6", []uint64{0xdda71, 0xddb4a, 0xddbe6, 0xdda04, 0xddb7b, 0xddbaf, 0xddaa5}},
		{"a\x00b", "2e8b23914b4e8d338bcd601dbfe95349d4c5d12b991d651f7b0ddbe0c35b594f", []uint64{0x3398b, 0x33866, 0x33958, 0x339e3, 0x3389b, 0x3389f, 0x33925}},
		{strings.Repeat("0123456789", 10), "471e450b86d342db78b449b3723d98db42bdeef209182ca4ea71b1ed7ba757a9", []uint64{0xdb478, 0xdb4da, 0xdb4d2, 0xdb456, 0xdb5d7, 0xdb4c1, 0xdb56e}},
	} {
		want, _ := hex.DecodeString(tc.digest)
		if ref := referenceSum(t, key, mustNFC(t, tc.key)); !slices.Equal(ref[:], want) {
			t.Fatalf("%+q: reference digest %x, pinned %s", tc.key, ref, tc.digest)
		}
		got, err := img.Positions(tc.key)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.pos) {
			t.Errorf("Positions(%+q) = %#v, want %#v", tc.key, got, tc.pos)
		}
	}
}

// TestLocateMatchesPositions checks the fast mask form against the
// bit-by-bit reference for random digests, sizes and k.
func TestLocateMatchesPositions(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 20000; trial++ {
		var d [32]byte
		for i := range d {
			d[i] = byte(r.Uint32())
		}
		blocks := 1 + r.Uint64N(1<<27)
		k := 1 + uint32(r.IntN(MaxK))
		l := locate(&d, blocks, k)
		var mask [8]uint64
		for _, p := range positions(&d, blocks, k) {
			if p/BlockBits*8 != l.word {
				t.Fatalf("position %d outside block at word %d", p, l.word)
			}
			mask[p%BlockBits/64] |= 1 << (p % 64)
		}
		if mask != l.mask || l.word >= blocks*8 {
			t.Fatalf("locate = %+v, reference mask %x (blocks %d)", l, mask, blocks)
		}
	}
}

func mustNFC(t *testing.T, s string) string {
	t.Helper()
	c, err := normalize.String(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestProbeMatchesPositions: probe, which every query runs, agrees with
// the reference positions on random digests against random bit arrays of
// every density.
func TestProbeMatchesPositions(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for trial := 0; trial < 2000; trial++ {
		blocks := 1 + r.Uint64N(64)
		words := make([]uint64, blocks*8)
		density := r.IntN(64)
		for i := range words {
			for j := 0; j < 64; j++ {
				if r.IntN(64) < density {
					words[i] |= 1 << j
				}
			}
		}
		var d [32]byte
		for i := range d {
			d[i] = byte(r.Uint32())
		}
		k := 1 + uint32(r.IntN(MaxK))
		want := true
		for _, p := range positions(&d, blocks, k) {
			want = want && words[p/64]&(1<<(p%64)) != 0
		}
		if got := probe(&d, words, blocks, k); got != want {
			t.Fatalf("probe = %v, positions say %v (k %d, density %d/64)", got, want, k, density)
		}
	}
}
