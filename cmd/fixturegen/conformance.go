package main

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/bits"
	"strings"

	"github.com/zeebo/blake3"

	"github.com/syncfilter/syncfilter/normalize"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// Conformance is fixtures/v1/conformance.json: what a reader in any
// language must reproduce, beyond the released fixtures. docs/FORMAT.md
// ("Conformance") documents every field.
type Conformance struct {
	Policy         string           `json:"policy"`
	UnicodeVersion string           `json:"unicode_version"`
	AssignedFile   string           `json:"unicode_assigned"`
	VectorSets     []VectorSet      `json:"vector_sets"`
	InvalidKeys    []InvalidKey     `json:"invalid_keys"`
	Snapshots      []string         `json:"snapshots"`
	Damaged        []DamagedVariant `json:"damaged"`
}

// VectorSet pins the position derivation for one parameter set.
type VectorSet struct {
	Name    string      `json:"name"`
	Layout  string      `json:"layout"`
	Hash    string      `json:"hash"`
	HashKey string      `json:"hash_key"`
	M       uint64      `json:"m"`
	K       uint32      `json:"k"`
	Blocks  uint64      `json:"blocks"`
	Entries []SetVector `json:"entries"`
}

// SetVector is one key of a VectorSet.
type SetVector struct {
	Why       string   `json:"why"`
	KeyHex    string   `json:"key_hex"` // the key's UTF-8 bytes, exactly
	Canonical string   `json:"canonical_hex"`
	Digest    string   `json:"digest_hex"`
	Block     uint64   `json:"block"`
	Positions []uint64 `json:"positions"`
}

// InvalidKey is a key every reader must refuse.
type InvalidKey struct {
	KeyHex string `json:"key_hex"`
	Why    string `json:"why"`
}

// DamagedVariant is a released snapshot with one edit, and the kind of
// error it must be refused with.
type DamagedVariant struct {
	Base string `json:"base"`
	Edit string `json:"edit"` // truncate | append | insert | xor
	At   int    `json:"at"`   // byte offset (truncate: the new length)
	Hex  string `json:"hex,omitempty"`
	Kind string `json:"kind"`
	Why  string `json:"why,omitempty"`
}

// largeK is the fixture with the largest k, so that a reader's field
// extraction is tested on real bits, not only on vectors.
func largeK(p syncfilter.Params) fixture {
	keys := asciiIDs(1000)
	return fixture{name: "large-k.sfb", keysFile: "keys-large-k.json", inserted: "every key, once", keys: keys, insert: keys, params: p, capacity: 1000, generation: 1000}
}

// conformanceKeys are the keys of every vector set, with why each is there.
func conformanceKeys() [][2]string {
	keys := [][2]string{
		{"", "the empty key"},
		{"a", "one ASCII byte"},
		{"a\x00b", "NUL is part of the key"},
		{"3f2504e0-4f89-11d3-9a0c-0305e82c3301", "a UUID id"},
		{"\ufeffabc", "a leading BOM is part of the key: a BOM-stripping decoder gets other bytes"},
		{"\ufeff", "the BOM alone"},
		{"caf\u00e9", "NFC"},
		{"cafe\u0301", "NFD of the previous key: the same canonical bytes"},
		{"\u212b", "ANGSTROM SIGN: NFC is U+00C5"},
		{"\u1112\u1161\u11ab", "Hangul jamo: NFC composes to U+D55C"},
		{"a\u0334\u0301", "two combining marks, classes 1 and 230, in canonical order"},
		{"a\u0301\u0334", "the same marks in the other order: reordered"},
		{"\U00016D67\U00016D67", "Kirat Rai, unassigned in 15.0.0: unchanged (Unicode 16's NFC composes it to U+16D68)"},
		{"\u0897\u0334", "U+0897 is unassigned in 15.0.0: no reordering (Unicode 16 gives it class 230 and reorders)"},
		{"e\U000113C2\u0301", "an unassigned code point between a letter and a mark blocks composition"},
		{"\U0001F4DD-note", "a supplementary-plane character (a surrogate pair in UTF-16)"},
	}
	for _, n := range []int{63, 64, 65, 1023, 1024, 1025, 2049} {
		keys = append(keys, [2]string{strings.Repeat("k", n), fmt.Sprintf("%d bytes: BLAKE3 block and chunk boundaries", n)})
	}
	return keys
}

// vectorSets lists the parameter sets: k from 1 to MaxK (fields crossing
// 64-bit words), m from one block to MaxBits, block counts that are and
// are not powers of two, and bit indexes past 2^32.
func vectorSets() []VectorSet {
	sets := []struct {
		name string
		m    uint64
		k    uint32
	}{
		{"one block, k = 1", 512, 1},
		{"m = 2^20, k = 8: field 7 crosses from bit 127 to bit 128", 1 << 20, 8},
		{"m = 2^20, k = 21: the most positions", 1 << 20, syncfilter.MaxK},
		{"3,001 blocks (not a power of two), k = 13", 3001 * 512, 13},
		{"m = 2^32 + 5 blocks: bit indexes past 2^32", 1<<32 + 5*512, 9},
		{"m = 2^36 - 512 (2^27 - 1 blocks), k = 16", syncfilter.MaxBits - 512, 16},
		{"m = 2^36, the largest, k = 21", syncfilter.MaxBits, syncfilter.MaxK},
	}
	out := make([]VectorSet, len(sets))
	for i, s := range sets {
		out[i] = VectorSet{Name: s.name, Layout: syncfilter.LayoutBlocked512.String(), Hash: syncfilter.HashBLAKE3Keyed.String(),
			HashKey: hex.EncodeToString(fixedKeyBytes(byte(128 + i))), M: s.m, K: s.k, Blocks: s.m / syncfilter.BlockBits}
	}
	return out
}

func fixedKeyBytes(seed byte) []byte {
	k := fixedKey(seed)
	return k[:]
}

// edgeKeys finds, among "edge-<n>" keys, the ones whose block is nearest
// to 0 and to blocks-1, and (for block counts that are not powers of two)
// ones whose block a reader taking only the high 32 bits of the first
// word would get wrong.
func edgeKeys(p syncfilter.Params) [][2]string {
	blocks := p.M / syncfilter.BlockBits
	var lo, hi, wrong []string
	var loV, hiV uint64 = ^uint64(0), 0
	for n := 0; n < 20000; n++ {
		k := fmt.Sprintf("edge-%d", n)
		d := digest(p, k)
		x := binary.LittleEndian.Uint64(d[:8])
		if x < loV {
			loV, lo = x, []string{k}
		}
		if x > hiV {
			hiV, hi = x, []string{k}
		}
		good, _ := bits.Mul64(x, blocks)
		if (x>>32)*blocks>>32 != good && len(wrong) < 2 {
			wrong = append(wrong, k)
		}
	}
	out := [][2]string{{lo[0], "the block nearest to 0 among 20,000 keys"}, {hi[0], "the block nearest to the last among 20,000 keys"}}
	for _, k := range wrong {
		out = append(out, [2]string{k, "block = high 32 bits × blocks >> 32 gets this one wrong: use the 128-bit product"})
	}
	return out
}

func digest(p syncfilter.Params, key string) [32]byte {
	c, _ := normalize.String(key)
	h, _ := blake3.NewKeyed(p.Key[:])
	_, _ = h.WriteString(c)
	var d [32]byte
	copy(d[:], h.Sum(nil))
	return d
}

// fillSet computes the entries of set: the conformance keys and the edge
// keys of its parameters.
func fillSet(set VectorSet) (VectorSet, error) {
	var key [32]byte
	b, _ := hex.DecodeString(set.HashKey)
	copy(key[:], b)
	p := syncfilter.Params{Layout: syncfilter.LayoutBlocked512, Hash: syncfilter.HashBLAKE3Keyed, M: set.M, K: set.K, Key: key}
	for _, kw := range append(conformanceKeys(), edgeKeys(p)...) {
		pos, err := p.Positions(kw[0])
		if err != nil {
			return set, fmt.Errorf("vector set %q: %w", set.Name, err)
		}
		canon, _ := normalize.String(kw[0])
		d := digest(p, kw[0])
		block, _ := bits.Mul64(binary.LittleEndian.Uint64(d[:8]), set.Blocks)
		set.Entries = append(set.Entries, SetVector{Why: kw[1], KeyHex: hex.EncodeToString([]byte(kw[0])),
			Canonical: hex.EncodeToString([]byte(canon)), Digest: hex.EncodeToString(d[:]), Block: block, Positions: pos})
	}
	return set, nil
}

// damagedVariants are the edits of base (its bytes b) every reader must
// refuse, each with its kind.
func damagedVariants(base string, b []byte) ([]DamagedVariant, error) {
	n := len(b)
	d := []DamagedVariant{
		{Base: base, Edit: "truncate", At: 0, Kind: "truncated"},
		{Base: base, Edit: "truncate", At: 5, Kind: "truncated"},
		{Base: base, Edit: "truncate", At: 10, Kind: "truncated"},
		{Base: base, Edit: "truncate", At: 100, Kind: "truncated"},
		{Base: base, Edit: "truncate", At: n - 1, Kind: "truncated"},
		{Base: base, Edit: "xor", At: 0, Hex: "01", Kind: "not_a_snapshot"},
		{Base: base, Edit: "xor", At: 8, Hex: "02", Kind: "unsupported_version"},
		{Base: base, Edit: "xor", At: 16, Hex: "01", Kind: "corrupt_header"},
		{Base: base, Edit: "xor", At: 185, Hex: "80", Kind: "corrupt_header"},
		{Base: base, Edit: "xor", At: 200, Hex: "01", Kind: "checksum_mismatch"},
		{Base: base, Edit: "xor", At: n - 1, Hex: "01", Kind: "checksum_mismatch"},
		{Base: base, Edit: "append", At: n, Hex: "00", Kind: "trailing_data"},
		{Base: base, Edit: "insert", At: 200, Hex: "0000000000000000", Kind: "trailing_data"},
		{Base: base, Edit: "insert", At: 192, Hex: "ff", Kind: "trailing_data"},
	}
	for i, v := range d {
		if v.At > n {
			return nil, fmt.Errorf("damaged variant %d: offset %d past %d bytes", i, v.At, n)
		}
	}
	return d, nil
}

func conformance(released map[string][]byte) (Conformance, map[string][]byte, error) {
	files := map[string][]byte{}
	c := Conformance{Policy: normalize.Policy, UnicodeVersion: normalize.PinnedUnicode, AssignedFile: "unicode-15.0.0-assigned.txt"}
	c.Snapshots = []string{"large-k.sfb"}
	for _, set := range vectorSets() {
		set, err := fillSet(set)
		if err != nil {
			return c, nil, err
		}
		c.VectorSets = append(c.VectorSets, set)
	}
	c.InvalidKeys = []InvalidKey{
		{hex.EncodeToString([]byte("bad\xff")), "0xFF never occurs in UTF-8"},
		{hex.EncodeToString([]byte("\xc3")), "a truncated two-byte sequence"},
		{hex.EncodeToString([]byte("\xed\xa0\x80")), "an encoded surrogate half (U+D800): a lone surrogate is not valid UTF-8"},
		{hex.EncodeToString([]byte("\xc0\xaf")), "an overlong encoding of '/'"},
		{hex.EncodeToString([]byte("\xf4\x90\x80\x80")), "above U+10FFFF"},
	}

	p := syncfilter.Params{Layout: syncfilter.LayoutBlocked512, Hash: syncfilter.HashBLAKE3Keyed, M: 64 * 512, K: syncfilter.MaxK, Key: fixedKey(200)}
	keys := largeK(p).keys
	snap, err := build(largeK(p), headerV1(normalize.PinnedUnicode))
	if err != nil {
		return c, nil, err
	}
	files["large-k.sfb"] = snap
	if files["keys-large-k.json"], err = marshal(keys); err != nil {
		return c, nil, err
	}

	// Damaged variants of released files, one edit each.
	if c.Damaged, err = damagedVariants("tiny.sfb", released["tiny.sfb"]); err != nil {
		return c, nil, err
	}

	// The code points assigned in Unicode 15.0.0, for readers with newer
	// normalization tables (docs/FORMAT.md, "Unicode versions").
	var buf bytes.Buffer
	buf.WriteString("# Code points assigned in Unicode 15.0.0 (every general category but Cn),\n")
	buf.WriteString("# as inclusive hexadecimal ranges LO..HI, one per line. See docs/FORMAT.md.\n")
	for _, r := range normalize.AssignedRanges() {
		fmt.Fprintf(&buf, "%04X..%04X\n", r[0], r[1])
	}
	files[c.AssignedFile] = buf.Bytes()
	return c, files, nil
}
