package syncfilter

import (
	"fmt"
	"math/bits"
)

// Image is a consistent, read-only copy of a filter's bits: what a snapshot
// stores, and what answers queries in tools that never insert. Nothing
// writes its words, so it needs no goroutine and no Close.
type Image struct {
	bitset
	items uint64 // keys inserted, repeats included
	ones  uint64 // bits set
}

// NewImage wraps words as the bits of a filter with parameters p and the
// given item count. len(words) must be p.M/64; the image keeps words
// without copying, and the caller must not change them afterwards.
func NewImage(p Params, items uint64, words []uint64) (*Image, error) {
	if words == nil {
		return nil, fmt.Errorf("new image: no words: %w", ErrInvalidParams)
	}
	b, err := newBitset(p, words)
	if err != nil {
		return nil, fmt.Errorf("new image: %w", err)
	}
	var ones uint64
	for _, w := range words {
		ones += uint64(bits.OnesCount64(w))
	}
	return &Image{bitset: b, items: items, ones: ones}, nil
}

// Thaw turns img into a live Filter without copying its bits and starts
// the filter's writer. img must not be used afterwards.
func Thaw(img *Image) (*Filter, error) { return thaw(img, nil) }

// ThawOn is Thaw with the filter's bit changes applied by w.
func ThawOn(w *Writer, img *Image) (*Filter, error) {
	if w == nil {
		return nil, fmt.Errorf("thaw image: no writer: %w", ErrInvalidParams)
	}
	return thaw(img, w)
}

func thaw(img *Image, w *Writer) (*Filter, error) {
	if img == nil || img.words == nil {
		return nil, fmt.Errorf("thaw image: %w", ErrInvalidParams)
	}
	f := start(img.bitset, img.items, img.ones, w)
	img.words = nil
	return f, nil
}

// Params returns the image's parameters.
func (img *Image) Params() Params { return img.params }

// Items returns the number of keys inserted, repeats included.
func (img *Image) Items() uint64 { return img.items }

// Words returns the bit array, shared with the image: bit i is bit i%64 of
// word i/64. Do not modify it.
func (img *Image) Words() []uint64 { return img.words }

// MightContain is Filter.MightContain on the copy.
func (img *Image) MightContain(key string) (bool, error) { return img.mightContain(key) }

// MightContainBatch is Filter.MightContainBatch on the copy.
func (img *Image) MightContainBatch(dst []bool, keys []string) ([]bool, error) {
	dst, _, err := img.mightContainBatch(dst, keys)
	return dst, err
}

// Positions is Filter.Positions on the copy.
func (img *Image) Positions(key string) ([]uint64, error) { return img.positions(key) }

// Stats returns the image's health; its counters are zero.
func (img *Image) Stats() Stats { return img.health(img.items, img.ones) }
