package syncfilter

import (
	"fmt"
	"unicode/utf8"

	"github.com/syncfilter/syncfilter/normalize"
)

// bitset is what Filter and Image share: the parameters, the bit array and
// the hasher. The words are read with atomic loads; who may write them is
// up to the owner (the Filter's writer goroutine; nobody for an Image).
type bitset struct {
	params Params
	blocks uint64
	words  []uint64 // bit i is bit i%64 of words[i/64]
	hasher *keyHasher
}

func newBitset(p Params, words []uint64) (bitset, error) {
	if err := p.Validate(); err != nil {
		return bitset{}, err
	}
	if words == nil {
		words = make([]uint64, p.M/64)
	} else if uint64(len(words)) != p.M/64 {
		return bitset{}, fmt.Errorf("adopt bits: %d words for m = %d: %w", len(words), p.M, ErrInvalidParams)
	}
	return bitset{params: p, blocks: p.M / BlockBits, words: words, hasher: newKeyHasher(p.Key)}, nil
}

// digest takes key's form under the filter's Compare and returns its
// keyed BLAKE3 digest.
func (b *bitset) digest(key string) ([32]byte, error) {
	c, err := b.params.Compare.Form(key)
	if err != nil {
		return [32]byte{}, err
	}
	return b.hasher.sum(c), nil
}

// locateKey maps key to its block and bits.
func (b *bitset) locateKey(key string) (loc, error) {
	d, err := b.digest(key)
	if err != nil {
		return loc{}, err
	}
	return locate(&d, b.blocks, b.params.K), nil
}

// mightContain is the single-key hot path: it does digest's work itself,
// since going through digest cost about 10 ns per query in the benchmark.
func (b *bitset) mightContain(key string) (bool, error) {
	c, err := b.params.Compare.Form(key)
	if err != nil {
		return false, err
	}
	d := b.hasher.sum(c)
	return probe(&d, b.words, b.blocks, b.params.K), nil
}

// validateBatch returns a *KeyError for the first key of an insert batch
// that is not valid UTF-8, so that a batch goes in whole or not at all.
func validateBatch(keys []string) error {
	for i, key := range keys {
		if !utf8.ValidString(key) {
			_, err := normalize.String(key) // names the offset
			return &KeyError{Index: i, Err: err}
		}
	}
	return nil
}

// queryChunk is how many keys a batch query hashes before it probes: the
// probes of a chunk are independent loads that the CPU overlaps, and the
// hashing goes eight keys at a time.
const queryChunk = 32

// sumKeys takes the forms of up to queryChunk keys under cmp and hashes
// them into out (len(out) == len(keys)), or returns a *KeyError for the
// first invalid key, indexed from base.
func (h *keyHasher) sumKeys(cmp Compare, keys []string, out [][32]byte, base int) error {
	if cmp == CompareBytes {
		for i, k := range keys {
			if !utf8.ValidString(k) {
				_, err := cmp.Form(k)
				return &KeyError{Index: base + i, Err: err}
			}
		}
		h.sumMany(keys, out)
		return nil
	}
	var canon [queryChunk]string
	for i, k := range keys {
		c, err := normalize.String(k) // inlined: the key itself when already NFC
		if err != nil {
			return &KeyError{Index: base + i, Err: err}
		}
		canon[i] = c
	}
	h.sumMany(canon[:len(keys)], out)
	return nil
}

// locateChunk canonicalizes and hashes up to queryChunk keys into locs
// for insertion, or returns a *KeyError for the first invalid key,
// indexed from base.
func (b *bitset) locateChunk(keys []string, locs []loc, base int) error {
	var sums [queryChunk][32]byte
	if err := b.hasher.sumKeys(b.params.Compare, keys, sums[:len(keys)], base); err != nil {
		return err
	}
	for i := range keys {
		locs[i] = locate(&sums[i], b.blocks, b.params.K)
	}
	return nil
}

// mightContainBatch appends one answer per key to dst and returns the
// number of maybes among them. A chunk's keys are hashed together (eight
// at a time), then each digest is probed without building its masks:
// probe has no branch on the bits it reads, so one key's cache miss
// overlaps the next keys' loads.
func (b *bitset) mightContainBatch(dst []bool, keys []string) ([]bool, uint64, error) {
	var sums [queryChunk][32]byte
	var maybes uint64
	for start := 0; start < len(keys); start += queryChunk {
		chunk := keys[start:min(start+queryChunk, len(keys))]
		err := b.hasher.sumKeys(b.params.Compare, chunk, sums[:len(chunk)], start)
		if err != nil {
			ke, ok := err.(*KeyError) // the first invalid key: those before it are answered too
			if !ok {
				return dst, maybes, err
			}
			chunk = chunk[:ke.Index-start]
			_ = b.hasher.sumKeys(b.params.Compare, chunk, sums[:len(chunk)], start) // valid keys: cannot fail
		}
		for i := range chunk {
			ok := probe(&sums[i], b.words, b.blocks, b.params.K)
			if ok {
				maybes++
			}
			dst = append(dst, ok)
		}
		if err != nil {
			return dst, maybes, err
		}
	}
	return dst, maybes, nil
}

// Positions returns the k bit positions of key in [0, m), in derivation
// order, duplicates included. It exists for tools and tests that pin the
// derivation; queries never need it.
func (b *bitset) positions(key string) ([]uint64, error) {
	d, err := b.digest(key)
	if err != nil {
		return nil, err
	}
	return positions(&d, b.blocks, b.params.K), nil
}
