package syncfilter

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"
)

// loc is where one key lives in a LayoutBlocked512 filter: the index of the
// first word of its block, and for each of the block's eight words the
// bits the key sets there.
type loc struct {
	word uint64
	mask [8]uint64
}

// locate maps digest d to its block and bits (see the package doc):
// block = high 64 bits of u64le(d[0:8]) × blocks; position i = bits
// 64+9i … 72+9i of d read as a little-endian 256-bit number; position p
// of the block is bit p%64 of its word p/64.
func locate(d *[32]byte, blocks uint64, k uint32) (l loc) {
	block, _ := bits.Mul64(binary.LittleEndian.Uint64(d[0:]), blocks)
	l.word = block * (BlockBits / 64)
	a := binary.LittleEndian.Uint64(d[8:])
	b := binary.LittleEndian.Uint64(d[16:])
	c := binary.LittleEndian.Uint64(d[24:])
	for i := uint32(0); i < k; i++ {
		p := a & (BlockBits - 1)
		l.mask[p>>6] |= 1 << (p & 63)
		a = a>>9 | b<<55
		b = b>>9 | c<<55
		c >>= 9
	}
	return l
}

// probe reports whether every bit of digest d is set, without building
// locate's masks (queries use it; inserts use locate). It reads every
// position, with no branch on the bits it reads, so that a caller's next
// key can be hashed while this key's cache line is still on its way (a
// first-clear-bit exit would be a branch the CPU mispredicts half the
// time, throwing that work away).
func probe(d *[32]byte, words []uint64, blocks uint64, k uint32) bool {
	block, _ := bits.Mul64(binary.LittleEndian.Uint64(d[0:]), blocks)
	blk := blockOf(words, block*(BlockBits/64))
	a := binary.LittleEndian.Uint64(d[8:])
	b := binary.LittleEndian.Uint64(d[16:])
	c := binary.LittleEndian.Uint64(d[24:])
	var clear uint64
	for i := uint32(0); i < k; i++ {
		p := a & (BlockBits - 1)
		clear |= ^atomic.LoadUint64(&blk[p>>6]) >> (p & 63)
		a = a>>9 | b<<55
		b = b>>9 | c<<55
		c >>= 9
	}
	return clear&1 == 0
}

// positions returns the k bit positions of d in [0, m), in derivation
// order (duplicates kept). It is the reference form of locate, used by
// known-answer tests and fixtures.
func positions(d *[32]byte, blocks uint64, k uint32) []uint64 {
	block, _ := bits.Mul64(binary.LittleEndian.Uint64(d[0:]), blocks)
	out := make([]uint64, k)
	for i := range out {
		bit := 64 + 9*i
		var v uint64
		for j := 0; j < 9; j++ {
			pos := bit + j
			v |= uint64(d[pos/8]>>(pos%8)&1) << j
		}
		out[i] = block*BlockBits + v
	}
	return out
}

// blockOf returns the eight words of the block starting at word w.
func blockOf(words []uint64, w uint64) *[8]uint64 {
	return (*[8]uint64)(words[w : w+8])
}

// set sets the bits of l with atomic stores, for readers running at the
// same time, and returns how many were newly set. Only the writer
// goroutine calls it: being the only writer, it may read the words
// plainly, and it discards the result of the atomic OR so that the
// compiler emits one locked OR instead of a compare-and-swap loop.
func (l *loc) set(words []uint64) (added uint64) {
	blk := blockOf(words, l.word)
	for i := range l.mask {
		if m := l.mask[i]; m != 0 {
			added += uint64(bits.OnesCount64(m &^ blk[i]))
			atomic.OrUint64(&blk[i], m)
		}
	}
	return added
}
