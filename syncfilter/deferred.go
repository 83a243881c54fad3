package syncfilter

import "fmt"

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

// NewDeferred returns an empty Deferred with a random hash key. It hashes
// keys under CompareCanonical.
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
	var sums [queryChunk][32]byte
	for start := 0; start < len(keys); start += queryChunk {
		chunk := keys[start:min(start+queryChunk, len(keys))]
		if err := d.hasher.sumKeys(CompareCanonical, chunk, sums[:len(chunk)], start); err != nil {
			return err // unreachable after the validation above
		}
		d.push(sums[:len(chunk)])
	}
	return nil
}

// push appends digests, starting a new chunk whenever the last is full.
func (d *Deferred) push(sums [][32]byte) {
	for len(sums) > 0 {
		k := len(d.chunks)
		if k == 0 || len(d.chunks[k-1]) == deferredChunk {
			d.chunks = append(d.chunks, make([][32]byte, 0, deferredChunk))
			k++
		}
		last := d.chunks[k-1]
		n := min(len(sums), deferredChunk-len(last))
		d.chunks[k-1] = append(last, sums[:n]...)
		sums = sums[n:]
		d.n += n
	}
}

// Builder returns a builder with parameters p holding every key added,
// and releases the digests. p.Key must be Key(). The Deferred cannot be
// used afterwards.
func (d *Deferred) Builder(p Params) (*Builder, error) {
	if d.hasher == nil {
		return nil, fmt.Errorf("build: deferred keys already handed to a builder: %w", ErrClosed)
	}
	if p.Compare != CompareCanonical {
		return nil, fmt.Errorf("build: deferred digests are of canonical keys, the parameters compare %v: %w", p.Compare, ErrInvalidParams)
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
			}
			b.setLocs(len(g))
		}
		d.chunks[i] = nil
	}
	d.chunks, d.hasher = nil, nil
	return b, nil
}
