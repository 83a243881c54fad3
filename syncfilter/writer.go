package syncfilter

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

type opKind uint8

const (
	opAdd opKind = iota
	opReset
	opImage
)

// addChunk is how many keys one request carries: large enough to amortize
// the hand-off to the writer, small enough to pipeline hashing (on the
// caller) with bit setting (on the writer).
const addChunk = 256

// request is one unit of work for the writer. The caller owns it until it
// is sent, the writer until it acknowledges on done.
type request struct {
	f    *Filter // the filter it changes
	op   opKind
	n    int // locs used, for opAdd
	locs [addChunk]loc
	img  *Image        // result of opImage
	done chan struct{} // capacity 1: the writer never blocks acknowledging
}

var requestPool = sync.Pool{New: func() any { return &request{done: make(chan struct{}, 1)} }}

func (f *Filter) getRequest(op opKind) *request {
	r := requestPool.Get().(*request)
	r.f, r.op, r.n, r.img = f, op, 0, nil
	return r
}

func putRequest(r *request) {
	r.f, r.img = nil, nil
	requestPool.Put(r)
}

// Writer is the goroutine that applies the bit changes of filters: the
// only code that changes their bits. A filter made by New or Thaw has one
// of its own; NewOn and ThawOn share one among many filters (an index of
// many collections runs one goroutine, not one per collection). Whoever
// calls NewWriter owns it and calls Close once its filters are retired.
type Writer struct {
	reqs   chan *request // unbuffered: a request handed over is always acknowledged
	quit   chan struct{} // closed by Close
	exited chan struct{} // closed by the goroutine when it returns
	once   sync.Once
}

// NewWriter starts a writer goroutine.
func NewWriter() *Writer {
	w := &Writer{reqs: make(chan *request), quit: make(chan struct{}), exited: make(chan struct{})}
	go w.run()
	return w
}

// Close stops the writer and waits for it to return. Inserts into its
// filters fail with ErrClosed from then on. It is idempotent.
func (w *Writer) Close() error {
	w.once.Do(func() { close(w.quit) })
	<-w.exited
	return nil
}

func (w *Writer) run() {
	defer close(w.exited)
	for {
		select {
		case r := <-w.reqs:
			r.f.apply(r)
			r.done <- struct{}{}
		case <-w.quit:
			return
		}
	}
}

func (f *Filter) apply(r *request) {
	switch r.op {
	case opAdd:
		// A locked OR waits for its cache line and lets no other memory
		// access overtake it, so first touch the lines of a group with
		// plain loads, which the CPU overlaps, then set the bits.
		const group = 16
		var added, touched, fresh uint64
		locs := r.locs[:r.n]
		for start := 0; start < len(locs); start += group {
			g := locs[start:min(start+group, len(locs))]
			for i := range g {
				touched += f.words[g[i].word]
			}
			for i := range g {
				if a := g[i].set(f.words); a > 0 {
					added += a
					fresh++
				}
			}
		}
		f.touched = touched
		f.ones.Add(added)
		f.items.Add(uint64(r.n))
		f.distinct.Add(fresh)
	case opReset:
		for i := range f.words {
			atomic.StoreUint64(&f.words[i], 0)
		}
		f.ones.Store(0)
		f.items.Store(0)
		f.distinct.Store(0)
	case opImage:
		words := make([]uint64, len(f.words))
		copy(words, f.words) // plain reads: this goroutine is the only writer
		r.img = &Image{bitset: f.bitset, items: f.items.Load(), ones: f.ones.Load()}
		r.img.words = words
	}
}

// send hands r to the writer.
func (f *Filter) send(ctx context.Context, r *request) error {
	select {
	case <-f.quit:
		return ErrClosed
	case <-f.w.quit:
		return ErrClosed
	default:
	}
	select {
	case f.w.reqs <- r:
		return nil
	case <-f.quit:
		return ErrClosed
	case <-f.w.quit:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wait waits for the writer to acknowledge r and recycles it. If ctx ends
// first, r is abandoned to the writer, which may still apply it.
func (f *Filter) wait(ctx context.Context, r *request) error {
	select {
	case <-r.done:
		putRequest(r)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *Filter) do(ctx context.Context, r *request) error {
	if err := f.send(ctx, r); err != nil {
		putRequest(r)
		return err
	}
	return f.wait(ctx, r)
}

// Add inserts key and returns once its bits are set. It fails for a key
// that is not valid UTF-8, after Close (ErrClosed), or when ctx ends first;
// in the last case the key may or may not have been inserted.
func (f *Filter) Add(ctx context.Context, key string) error {
	l, err := f.locateKey(key)
	if err != nil {
		return fmt.Errorf("add key: %w", err)
	}
	r := f.getRequest(opAdd)
	r.locs[0], r.n = l, 1
	if err := f.do(ctx, r); err != nil {
		return fmt.Errorf("add key: %w", err)
	}
	return nil
}

// AddBatch inserts every key and returns once all their bits are set. The
// keys are checked first: if one is not valid UTF-8, AddBatch returns a
// *KeyError naming it and inserts nothing. The caller's goroutine hashes
// while the writer sets the bits of the previous chunk, and several
// goroutines may call AddBatch at once to hash on several cores.
func (f *Filter) AddBatch(ctx context.Context, keys []string) error {
	if err := validateBatch(keys); err != nil {
		return fmt.Errorf("add batch: %w", err)
	}
	var inflight [2]*request
	var err error
	for start, slot := 0, 0; start < len(keys) && err == nil; start, slot = start+addChunk, slot^1 {
		if r := inflight[slot]; r != nil {
			inflight[slot] = nil
			if err = f.wait(ctx, r); err != nil {
				break
			}
		}
		r := f.getRequest(opAdd)
		chunk := keys[start:min(start+addChunk, len(keys))]
		for off := 0; off < len(chunk) && err == nil; off += queryChunk {
			piece := chunk[off:min(off+queryChunk, len(chunk))]
			err = f.locateChunk(piece, r.locs[off:], start+off) // cannot fail after the validation above
			r.n += len(piece)
		}
		if err == nil {
			if err = f.send(ctx, r); err == nil {
				inflight[slot] = r
				continue
			}
		}
		putRequest(r)
	}
	for _, r := range inflight {
		if r != nil {
			if werr := f.wait(ctx, r); err == nil {
				err = werr
			}
		}
	}
	if err != nil {
		return fmt.Errorf("add batch: %w", err)
	}
	return nil
}

// Reset clears every bit and the item count. Queries running meanwhile may
// see some bits cleared and others not: reset a filter only while nobody
// relies on its answers (before it is handed to readers again).
func (f *Filter) Reset(ctx context.Context) error {
	if err := f.do(ctx, f.getRequest(opReset)); err != nil {
		return fmt.Errorf("reset filter: %w", err)
	}
	return nil
}

// Image returns a consistent copy of the filter: the writer copies the
// bits between two requests, so no insert is ever half applied in it.
// Inserts wait while the copy is made (about a millisecond per 10 MiB).
func (f *Filter) Image(ctx context.Context) (*Image, error) {
	r := f.getRequest(opImage)
	if err := f.send(ctx, r); err != nil {
		putRequest(r)
		return nil, fmt.Errorf("copy filter: %w", err)
	}
	select {
	case <-r.done:
		img := r.img
		putRequest(r)
		return img, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("copy filter: %w", ctx.Err())
	}
}
