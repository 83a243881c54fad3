package syncfilter

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Filter is a Bloom filter with a single owner for its bits.
//
// New starts one writer goroutine that applies every bit change (Add,
// AddBatch, Reset) and hands out consistent copies (Image); Close stops it
// and waits for it. NewOn and ThawOn give the filter a Writer shared with
// other filters instead (one goroutine for many filters); Close then
// retires the filter and leaves the Writer running. Queries never go through the writer: they read the
// words with atomic loads and run concurrently with it and with each
// other, without locks. An insert returns only after the writer has set
// its bits, so once Add returns nil, MightContain answers true for that key
// on every goroutine that learns of the return.
//
// All methods are safe for concurrent use. Queries keep working after
// Close; inserts then fail with ErrClosed.
type Filter struct {
	bitset // immutable after New, except the words, which only the writer sets

	// Counters of batch answers. negatives and maybes are bumped by
	// readers; the padding keeps them off the cache line of the
	// read-mostly fields above.
	_         [64]byte
	negatives atomic.Uint64 // queries answered "absent"
	_         [56]byte
	maybes    atomic.Uint64 // queries answered "maybe"
	_         [56]byte

	items    atomic.Uint64 // keys applied, repeats included; written by the writer
	distinct atomic.Uint64 // keys applied that set at least one bit; written by the writer
	ones     atomic.Uint64 // bits set; written by the writer

	touched uint64 // written by the writer only, so that its prefetching loads are kept

	w         *Writer       // the goroutine that applies its bit changes
	own       bool          // w is the filter's own: Close stops it
	quit      chan struct{} // closed by Close
	closeOnce sync.Once
}

// New returns an empty filter with parameters p and starts its writer.
func New(p Params) (*Filter, error) {
	b, err := newBitset(p, nil)
	if err != nil {
		return nil, err
	}
	return start(b, 0, 0, nil), nil
}

// NewOn returns an empty filter with parameters p whose bit changes w
// applies.
func NewOn(w *Writer, p Params) (*Filter, error) {
	if w == nil {
		return nil, fmt.Errorf("new filter: no writer: %w", ErrInvalidParams)
	}
	b, err := newBitset(p, nil)
	if err != nil {
		return nil, err
	}
	return start(b, 0, 0, w), nil
}

// start makes a filter of b on w, or on a writer of its own if w is nil.
func start(b bitset, items, ones uint64, w *Writer) *Filter {
	f := &Filter{bitset: b, w: w, quit: make(chan struct{})}
	if w == nil {
		f.w, f.own = NewWriter(), true
	}
	f.items.Store(items)
	f.distinct.Store(items) // what came before counts as it was counted
	f.ones.Store(ones)
	return f
}

// Params returns the filter's parameters.
func (f *Filter) Params() Params { return f.params }

// MightContain reports false if key was certainly never added, and true
// (maybe) otherwise. It fails only for a key that is not valid UTF-8.
//
// It is the single-key hot path (a cache asking per request) and is not
// counted in Counters: a counter shared by goroutines costs a locked
// instruction per query, which on amd64 is a full memory barrier that
// keeps one query's memory access from overlapping the next query's
// hashing (measured: 15 to 20 ns of a 90 ns query). Count where you
// already have a per-request metric, or ask MightContainBatch, which
// counts a page with one atomic addition.
func (f *Filter) MightContain(key string) (bool, error) {
	return f.mightContain(key)
}

// MightContainBatch appends MightContain of each key to dst, in order, and
// returns the extended slice. On an invalid key it returns a *KeyError and
// the answers for the keys before it.
func (f *Filter) MightContainBatch(dst []bool, keys []string) ([]bool, error) {
	before := len(dst)
	dst, maybes, err := f.mightContainBatch(dst, keys)
	answered := uint64(len(dst) - before)
	f.maybes.Add(maybes)
	f.negatives.Add(answered - maybes)
	return dst, err
}

// Positions returns the k bit positions of key in [0, m), in derivation
// order, duplicates included: the reference form of the layout, for tools
// and known-answer tests.
func (f *Filter) Positions(key string) ([]uint64, error) { return f.positions(key) }

// Close retires the filter: inserts fail with ErrClosed from now on. A
// filter with a writer of its own stops it and waits for it to return.
// It is idempotent.
func (f *Filter) Close() error {
	f.closeOnce.Do(func() { close(f.quit) })
	if f.own {
		return f.w.Close()
	}
	return nil
}

// Counters returns the query counters without scanning the bits.
func (f *Filter) Counters() Counters {
	n, m := f.negatives.Load(), f.maybes.Load()
	return Counters{Queries: n + m, Negatives: n, Maybes: m}
}

// Counters count the answers of MightContainBatch since the filter was
// created (MightContain is not counted; see there).
type Counters struct {
	Queries   uint64 // Negatives + Maybes
	Negatives uint64 // answered "absent": certain, no lookup needed
	Maybes    uint64 // answered "maybe": to be confirmed by the source of truth
}

// Stats scans the bit array (about a millisecond per 10 MiB) and returns
// the filter's health together with its counters.
func (f *Filter) Stats() Stats {
	s := f.health(f.items.Load(), f.ones.Load())
	s.Distinct = f.distinct.Load()
	s.Counters = f.Counters()
	return s
}

// Load returns, without scanning, the keys applied (repeats included),
// those that set at least one bit, and the bits set: enough to tell
// cheaply whether the filter is filling up.
func (f *Filter) Load() (items, distinct, ones uint64) {
	return f.items.Load(), f.distinct.Load(), f.ones.Load()
}
