package rebuild

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// scan builds an unpublished filter from a full read of the source
// (store.DB.Scan): every row committed before the scan's head is read,
// everything later is in the log after it. The stored spellings that are
// not NFC go to the spellings table (some while the scan runs, the rest
// returned, for the record of the scan), and the filter covers the head,
// in the epoch the head was read in. rep gets the Progress calls, and is
// finished when scan returns.
func (ix *Index) scan(ctx context.Context, f *file, src *store.Source, l *store.Lease, why reason, rep *reporter) (_ *serving, spellings [][2]string, err error) {
	defer rep.finish()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rep.cancel = cancel // a Progress that panics stops the scan
	var (
		fb      *filterBuilder // read after built
		head    store.Head
		total   atomic.Int64 // rows estimated, then counted: for progress
		done    int64
		shown   int64 // done at the last Progress call
		invalid int64
		batches = make(chan buildMsg, 4)
		built   = make(chan error, 1)
		began   bool
	)
	// However the scan ends (an error, a panic), the builder and the
	// count stop before it returns.
	defer func() {
		if began && batches != nil {
			close(batches)
			<-built
		}
	}()
	hook := ix.db.cfg.knobs.scanRow
	hooks := store.ScanHooks{
		Begin: func(h store.Head, estimate int64) error {
			if hook != nil {
				if err := hook(0); err != nil {
					return fmt.Errorf("scan source: %w", err)
				}
			}
			head, began = h, true
			total.Store(estimate)
			prev := ix.get().filter // the filter being replaced, if any
			fb = ix.startBuilder(ctx, cancel, f, src, batches, built, &total,
				func(rows int64) uint64 { return ix.sizeFor(rows, prev, why.auto) })
			return nil
		},
		Keys: func(keys []string) error {
			if ix.life.Closing() {
				return ErrClosed // the filter would never serve
			}
			if err := context.Cause(ctx); err != nil {
				// Cancelled (SIGINT in the cron job, Suspend, a panicking
				// Progress): stop at this chunk, whether or not SQLite
				// noticed the interrupt in time.
				return err
			}
			ix.db.yieldToCalls(ctx)
			batch := make([]string, 0, len(keys))
			for _, k := range keys {
				c, err := canonicalStored(k)
				if err != nil {
					invalid++
					ix.m.skipped.Add(1) // no query can name it
					continue
				}
				if c != k {
					spellings = append(spellings, [2]string{c, k})
				}
				batch = append(batch, c)
			}
			done += int64(len(keys))
			if hook != nil {
				if err := hook(done); err != nil {
					return fmt.Errorf("scan source: %w", err)
				}
			}
			select {
			case batches <- buildMsg{keys: batch}:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			if err := f.st.RenewLease(ctx, src, l); err != nil {
				return err
			}
			if len(spellings) >= batchKeys {
				if err := f.st.AddSpellings(ctx, src, head.Epoch, spellings); err != nil {
					return err
				}
				spellings = spellings[:0]
			}
			if done-shown >= ix.cfg.ProgressEvery {
				shown = done
				rep.update(done, max(total.Load(), done))
			}
			return nil
		},
	}
	counts, err := f.st.Scan(ctx, src, hooks)
	if !began { // no builder goroutine
		return nil, nil, err
	}
	rows := done + counts.Nulls + counts.Blobs + counts.Long
	if err == nil {
		select {
		case batches <- buildMsg{end: true, rows: rows}:
		case <-ctx.Done():
			err = context.Cause(ctx)
		}
	}
	close(batches)
	batches = nil
	if berr := <-built; berr != nil {
		return nil, nil, fmt.Errorf("scan source: %w", berr)
	}
	if err != nil {
		return nil, nil, err
	}
	rep.update(done, done)
	if fb.count != nil && fb.count.err == nil {
		rows = fb.count.n
	}
	ix.m.skipped.Add(uint64(counts.Long))
	ix.m.scanned(ScanCounts{Rows: rows, Keys: done - invalid, SkippedText: invalid + counts.Long, SkippedNull: counts.Nulls, SkippedBlob: counts.Blobs})
	filter, err := syncfilter.ThawOn(ix.db.writer, fb.b.Image())
	if err != nil {
		return nil, nil, err
	}
	s := &serving{id: newID(), f: filter, capacity: fb.capacity, file: f, src: src, epoch: head.Epoch, rows: rows, built: time.Now()}
	s.at.set(mark{gen: head.Seq, tag: head.Tag})
	s.floor.Store(head.Floor)
	return s, spellings, nil
}

// batchKeys is how many stored spellings a scan gathers before it writes
// them to the spellings table.
const batchKeys = 4096

// defaultDeferredRows is the most digests a rebuild keeps while its count
// runs (syncfilter.DigestBytes each: 64 MiB); past it, the builder waits
// for the count.
const defaultDeferredRows = 64 << 20 / syncfilter.DigestBytes

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
// starts owns every field: it hashes the batches the scanning goroutine
// reads, on the other core, and sets bits with plain stores since nobody
// queries the filter yet. The filter's size comes from a count(*) run
// alongside the scan on another connection; until it is in, the keys are
// kept as digests (syncfilter.Deferred), at most deferredRows of them,
// after which the builder waits for it. The count may see a few rows
// committed after the scan's read began: it only sizes the filter, whose
// contents come from the read alone. If the scan ends first, the rows it
// read size the filter. The fields may be read once that goroutine has
// sent its result.
type filterBuilder struct {
	ix       *Index
	sizeFor  func(rows int64) uint64
	deferred *syncfilter.Deferred
	limit    int64               // deferredRows
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
	k := ix.db.cfg.knobs
	fb := &filterBuilder{ix: ix, sizeFor: sizeFor, deferred: syncfilter.NewDeferred(), limit: k.deferredRows, counted: make(chan countResult, 1)}
	if fb.limit <= 0 {
		fb.limit = defaultDeferredRows
	}
	go func() {
		var n int64
		var err error
		if k.beforeCount != nil {
			err = k.beforeCount()
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
		full := int64(fb.deferred.Len()) >= fb.limit && !m.end
		if full && fb.count == nil && fb.ix.db.cfg.knobs.countWait != nil {
			fb.ix.db.cfg.knobs.countWait()
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
