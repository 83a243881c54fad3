package syncfilter

import (
	"fmt"
	"math/bits"
)

// Builder fills a filter that nobody queries yet. It has no goroutine and
// no locks: the one goroutine that owns it sets bits with plain stores,
// several times cheaper than the atomic read-modify-writes a published
// Filter's writer needs while readers run. Image (then Thaw) hands the
// result over; that hand-over is the publication that makes the plain
// stores visible to readers.
//
// A Builder is not safe for concurrent use.
type Builder struct {
	bitset
	items, ones uint64
	touched     uint64 // keeps the prefetching loads of AddBatch
	locs        [queryChunk]loc
}

// NewBuilder returns an empty builder with parameters p.
func NewBuilder(p Params) (*Builder, error) {
	b, err := newBitset(p, nil)
	if err != nil {
		return nil, err
	}
	return &Builder{bitset: b}, nil
}

// AddBatch inserts every key. If one is not valid UTF-8 it returns a
// *KeyError naming it and inserts nothing.
func (b *Builder) AddBatch(keys []string) error {
	if b.words == nil {
		return fmt.Errorf("add batch: builder already handed over its image: %w", ErrClosed)
	}
	if err := validateBatch(keys); err != nil {
		return fmt.Errorf("add batch: %w", err)
	}
	for start := 0; start < len(keys); start += queryChunk {
		chunk := keys[start:min(start+queryChunk, len(keys))]
		if err := b.locateChunk(chunk, b.locs[:], start); err != nil {
			return fmt.Errorf("add batch: %w", err) // unreachable after the validation above
		}
		b.setLocs(len(chunk))
	}
	return nil
}

// setLocs sets the bits of b.locs[:n].
func (b *Builder) setLocs(n int) {
	// Touch the chunk's cache lines first: independent loads overlap
	// their misses, where a load-then-store per key would wait on each.
	for i := range n {
		b.touched += b.words[b.locs[i].word]
	}
	for i := range n {
		b.ones += b.locs[i].setPlain(b.words)
	}
	b.items += uint64(n)
}

// Image returns the built filter and resets the builder to no bits (it
// must not be used afterwards).
func (b *Builder) Image() *Image {
	img := &Image{bitset: b.bitset, items: b.items, ones: b.ones}
	b.words = nil
	return img
}

// setPlain is set for a filter no reader sees yet.
func (l *loc) setPlain(words []uint64) (added uint64) {
	blk := blockOf(words, l.word)
	for i, m := range l.mask {
		added += uint64(bits.OnesCount64(m &^ blk[i]))
		blk[i] |= m
	}
	return added
}
