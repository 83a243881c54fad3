package syncfilter

import (
	"fmt"

	"github.com/syncfilter/syncfilter/normalize"
)

// Deferred hashes keys for a filter whose size is not known yet, such as a
// rebuild that learns how many rows there are only by reading them all.
// The hash key is fixed when the Deferred is made; the 32-byte digests are
// kept, in chunks that are never copied, until Builder receives the
// parameters and sets their bits. Memory: DigestBytes per key until then.
//
// A Deferred is not safe for concurrent use.
type Deferred struct {
	hasher *keyHasher
	key    [32]byte
	chunks [][][32]byte // full chunks of deferredChunk digests, then the last one
	n      int
}

// DigestBytes is what a Deferred holds per key.
const DigestBytes = 32

const deferredChunk = 4096

// NewDeferred returns an empty Deferred with a random hash key.
func NewDeferred() *Deferred {
	k := randomKey()
	return &Deferred{hasher: newKeyHasher(k), key: k}
}

// Key returns the hash key the filter's parameters must carry.
func (d *Deferred) Key() [32]byte { return d.key }

// Len returns how many keys were added, repeats included.
func (d *Deferred) Len() int { return d.n }

// AddBatch hashes every key. If one is not valid UTF-8 it returns a
// *KeyError naming it and adds nothing.
func (d *Deferred) AddBatch(keys []string) error {
	if d.hasher == nil {
		return fmt.Errorf("add batch: deferred keys already handed to a builder: %w", ErrClosed)
	}
	if err := validateBatch(keys); err != nil {
		return fmt.Errorf("add batch: %w", err)
	}
	var canon [queryChunk]string
	for start := 0; start < len(keys); start += queryChunk {
		chunk := keys[start:min(start+queryChunk, len(keys))]
		for i, k := range chunk {
			c, err := normalize.String(k)
			if err != nil {
				return &KeyError{Index: start + i, Err: err} // unreachable after the validation above
			}
			canon[i] = c
		}
		for done := 0; done < len(chunk); {
			last := d.tail()
			n := min(len(chunk)-done, cap(last)-len(last))
			out := last[len(last) : len(last)+n]
			d.hasher.sumMany(canon[done:done+n], out)
			d.chunks[len(d.chunks)-1] = last[:len(last)+n]
			done += n
			d.n += n
		}
	}
	return nil
}

// tail returns the last chunk, starting a new one when it is full.
func (d *Deferred) tail() [][32]byte {
	if k := len(d.chunks); k > 0 && len(d.chunks[k-1]) < deferredChunk {
		return d.chunks[k-1]
	}
	d.chunks = append(d.chunks, make([][32]byte, 0, deferredChunk))
	return d.chunks[len(d.chunks)-1]
}

// Builder returns a builder with parameters p holding every key added,
// and releases the digests. p.Key must be Key(). The Deferred cannot be
// used afterwards.
func (d *Deferred) Builder(p Params) (*Builder, error) {
	if d.hasher == nil {
		return nil, fmt.Errorf("build: deferred keys already handed to a builder: %w", ErrClosed)
	}
	if p.Key != d.key {
		return nil, fmt.Errorf("build: parameters carry another hash key than the deferred digests: %w", ErrInvalidParams)
	}
	b, err := NewBuilder(p)
	if err != nil {
		return nil, err
	}
	for i, chunk := range d.chunks {
		for start := 0; start < len(chunk); start += queryChunk {
			g := chunk[start:min(start+queryChunk, len(chunk))]
			for j := range g {
				b.locs[j] = locate(&g[j], b.blocks, p.K)
				b.touched += b.words[b.locs[j].word]
			}
			for j := range g {
				b.ones += b.locs[j].setPlain(b.words)
			}
			b.items += uint64(len(g))
		}
		d.chunks[i] = nil
	}
	d.chunks, d.hasher = nil, nil
	return b, nil
}
