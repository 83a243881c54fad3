package rebuild

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// deferredRows is the most digests a rebuild keeps while its count runs
// (syncfilter.DigestBytes each: 64 MiB); past it, the builder waits for
// the count.
var deferredRows int64 = 64 << 20 / syncfilter.DigestBytes // a variable for the tests

// testHookCountWait, if set, runs when the builder is about to wait for
// the count because its digests reached deferredRows; testHookBeforeCount
// runs before the count starts, and an error it returns is the count's.
var (
	testHookCountWait   func()
	testHookBeforeCount func() error
)

// buildMsg is one message to the builder goroutine: keys to insert, or the
// end of the scan with the rows it read.
type buildMsg struct {
	keys []string
	end  bool
	rows int64
}

// countResult is the count(*) run alongside a scan.
type countResult struct {
	n   int64
	err error
}

// filterBuilder fills a rebuild's new filter. The goroutine startBuilder
// starts owns every field: it hashes the batches the scanning goroutine reads, on the
// other core, and sets bits with plain stores since nobody queries the
// filter yet. The filter's size comes from a count(*) run alongside the
// scan on another connection; until it is in, the keys are kept as
// digests (syncfilter.Deferred), at most deferredRows of them, after which
// the builder waits for it. The count may see a few rows committed after
// the scan's read began: it only sizes the filter, whose contents come
// from the read alone. If the scan ends first, the rows it read size the
// filter. The fields may be read once that goroutine has sent its result.
type filterBuilder struct {
	ix       *Index
	sizeFor  func(rows int64) uint64
	deferred *syncfilter.Deferred
	b        *syncfilter.Builder // nil until sized
	capacity uint64
	counted  chan countResult // the counting goroutine's one result
	count    *countResult     // once received
	err      error
}

// startBuilder starts the counting and the builder goroutines. The builder
// reads batches until they are closed, cancels the scan on failure, and
// sends its result on built after the counting goroutine has ended.
func (ix *Index) startBuilder(ctx context.Context, cancel func(), f *file, src *store.Source, batches <-chan buildMsg, built chan<- error, total *atomic.Int64,
	sizeFor func(rows int64) uint64) *filterBuilder {
	fb := &filterBuilder{ix: ix, sizeFor: sizeFor, deferred: syncfilter.NewDeferred(), counted: make(chan countResult, 1)}
	go func() {
		var n int64
		var err error
		if testHookBeforeCount != nil {
			err = testHookBeforeCount()
		}
		if err == nil {
			n, err = f.st.CountAll(ctx, src)
		}
		if err == nil {
			total.Store(n)
		}
		fb.counted <- countResult{n, err}
	}()
	go func() {
		for m := range batches {
			if fb.err == nil {
				fb.take(m)
				if fb.err != nil {
					cancel()
				}
			}
		}
		fb.receive(true) // the counting goroutine ends before this one
		if fb.err == nil && fb.count.err != nil {
			// The count only sizes the filter, but a read of the source
			// that fails fails the rebuild, whenever it comes in.
			fb.err = fb.count.err
		}
		built <- fb.err
	}()
	return fb
}

// take handles one message.
func (fb *filterBuilder) take(m buildMsg) {
	if fb.b == nil {
		// Size as soon as the count is in; wait for it rather than keep
		// more than deferredRows digests.
		full := fb.deferred.Len() >= int(deferredRows) && !m.end
		if full && fb.count == nil && testHookCountWait != nil {
			testHookCountWait()
		}
		fb.receive(full)
		switch {
		case fb.count == nil:
		case fb.count.err != nil:
			fb.err = fb.count.err
			return
		default:
			if fb.size(fb.count.n); fb.err != nil {
				return
			}
		}
	}
	switch {
	case m.end:
		if fb.b == nil { // the scan ended first: size from the rows it read
			fb.size(m.rows)
		}
	case fb.b != nil:
		fb.err = fb.b.AddBatch(m.keys)
	default:
		fb.err = fb.deferred.AddBatch(m.keys)
	}
}

// size makes the filter for rows rows and sets the bits of the keys kept
// as digests.
func (fb *filterBuilder) size(rows int64) {
	fb.capacity = fb.sizeFor(rows)
	params, err := syncfilter.NewParams(fb.capacity, fb.ix.cfg.FPR)
	if err != nil {
		fb.err = fmt.Errorf("size filter for %d rows: %w", rows, err)
		return
	}
	params.Key = fb.deferred.Key()
	fb.b, fb.err = fb.deferred.Builder(params)
}

// receive takes the count's result if it is in, or waits for it if block.
func (fb *filterBuilder) receive(block bool) {
	if fb.count != nil {
		return
	}
	if block {
		r := <-fb.counted
		fb.count = &r
		return
	}
	select {
	case r := <-fb.counted:
		fb.count = &r
	default:
	}
}
