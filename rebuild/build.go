package rebuild

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/syncfilter/syncfilter/syncfilter"
)

// testHookScanRow, when set by tests, runs for every row a scan reads; an
// error it returns fails the scan as a SQLite error would.
var testHookScanRow func(n int64) error

// Rebuild replaces the filter with one built from a full scan of the
// source:
//
//	bypass (every query → SQLite) → scan in one read transaction, keys
//	hashed and set by one builder goroutine → catch up
//	on the log since the scan and the keys covered meanwhile → publish (one
//	atomic pointer store) → save the snapshot → compact the log.
//
// If the scan fails or ctx ends, the half-built filter is dropped, never
// served, and the previous filter (or bypass) answers again. If only the
// save fails, the new filter serves (it is complete) and the error is
// returned. Rebuilds do not overlap: a second call waits for the first.
func (ix *Index) Rebuild(ctx context.Context) error {
	if err := ix.enter(); err != nil {
		return err
	}
	defer ix.leave()
	if ix.cfg.ReadOnly {
		return fmt.Errorf("rebuild: %w", ErrReadOnly)
	}
	ix.rebuildMu.Lock()
	defer ix.rebuildMu.Unlock()
	start := time.Now()

	// The lease keeps log compaction (by any process) from deleting the
	// entries this rebuild catches up from, until it has published.
	l, err := ix.st.takeLease(ctx)
	if err != nil {
		ix.m.rebuildDone(start, err)
		return fmt.Errorf("rebuild: %w", err)
	}
	defer ix.st.releaseLease(ctx, l)
	prev := ix.startRebuilding()
	s, err := ix.scan(ctx, l)
	if err == nil {
		if err = ix.publish(ctx, s); err != nil {
			_ = s.f.Close()
		}
	}
	if err != nil {
		ix.restore(ctx, prev)
		err = fmt.Errorf("rebuild: %w", err)
		ix.m.rebuildDone(start, err)
		return err
	}
	if prev != nil {
		_ = prev.f.Close()
	}
	if err := ix.st.markScanned(ctx); err != nil {
		ix.m.rebuildDone(start, err)
		return fmt.Errorf("rebuild: %w", err)
	}
	if ix.cfg.Snapshot != "" {
		if err := ix.save(ctx, s); err != nil {
			err = fmt.Errorf("rebuild: %w", err)
			ix.m.rebuildDone(start, err)
			return err
		}
		if saved := ix.savedGen.Load(); saved > ix.cfg.LogRetain {
			if err := ix.st.compactLog(ctx, saved-ix.cfg.LogRetain); err != nil {
				ix.m.rebuildDone(start, err)
				return fmt.Errorf("rebuild: %w", err)
			}
		}
	}
	ix.m.rebuildDone(start, nil)
	return nil
}

// deferredRows is the most digests a rebuild keeps while its count runs
// (syncfilter.DigestBytes each: 64 MiB); past it, the builder waits for
// the count.
var deferredRows int64 = 64 << 20 / syncfilter.DigestBytes // a variable for the tests

// testHookCountWait, if set, runs when the builder is about to wait for
// the count because its digests reached deferredRows; testHookBeforeCount
// runs before the count starts.
var testHookCountWait, testHookBeforeCount func()

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

// scan builds an unpublished filter from one consistent read of the
// source (store.scan): every row committed up to the read's generation is
// scanned, everything later is in the log after it.
func (ix *Index) scan(ctx context.Context, l *lease) (*serving, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		b        *syncfilter.Builder // set by the builder goroutine; read after built
		capacity uint64              // set by the builder goroutine; read after built
		head     uint64
		counts   ScanCounts
		total    atomic.Int64 // rows estimated, then counted: for progress
		done     int64
		invalid  int64
		aliases  [][2]string
		batch    = make([]string, 0, batchKeys)
		batches  = make(chan buildMsg, 4)
		built    = make(chan error, 1)
		counted  = make(chan countResult, 1)
	)
	hooks := scanHooks{
		begin: func(gen uint64, estimate int64) error {
			head = gen
			total.Store(estimate)
			// The filter's size comes from a count(*) on another
			// connection, run alongside the scan instead of before it.
			// It may count a few rows committed after the scan's read
			// began: it only sizes the filter, whose contents come from
			// the read alone.
			go func() {
				if testHookBeforeCount != nil {
					testHookBeforeCount()
				}
				n, err := ix.st.countAll(ctx)
				if err == nil {
					total.Store(n)
				}
				counted <- countResult{n, err}
			}()
			// One builder goroutine owns the new filter's bits: it hashes
			// the batches the scanning goroutine reads, on the other core,
			// and sets bits with plain stores since nobody queries the
			// filter yet. Until the count is in, it keeps digests.
			go func() {
				deferred := syncfilter.NewDeferred()
				var err error
				size := func(rows int64) {
					capacity = ix.sizeFor(rows)
					params, perr := syncfilter.NewParams(capacity, ix.cfg.FPR)
					if perr != nil {
						err = fmt.Errorf("size filter for %d rows: %w", rows, perr)
						return
					}
					params.Key = deferred.Key()
					b, err = deferred.Builder(params)
				}
				var count *countResult
				receive := func(block bool) {
					if count != nil {
						return
					}
					if block {
						r := <-counted
						count = &r
						return
					}
					select {
					case r := <-counted:
						count = &r
					default:
					}
				}
				for m := range batches {
					if err != nil {
						continue
					}
					if b == nil {
						// Size as soon as the count is in; wait for it
						// rather than keep more than deferredRows digests.
						full := deferred.Len() >= int(deferredRows) && !m.end
						if full && count == nil && testHookCountWait != nil {
							testHookCountWait()
						}
						receive(full)
						switch {
						case count == nil:
						case count.err != nil:
							err = count.err
						default:
							size(count.n)
						}
					}
					switch {
					case err != nil:
					case m.end:
						if b == nil { // the scan ended first: size from the rows it read
							size(m.rows)
						}
					case b != nil:
						err = b.AddBatch(m.keys)
					default:
						err = deferred.AddBatch(m.keys)
					}
					if err != nil {
						cancel()
					}
				}
				receive(true) // the counting goroutine ends before this one
				built <- err
			}()
			return nil
		},
	}
	send := func() error {
		select {
		case batches <- buildMsg{keys: batch}:
		case <-ctx.Done():
			return fmt.Errorf("scan source: %w", context.Cause(ctx))
		}
		batch = make([]string, 0, batchKeys)
		if err := ix.st.renewLease(ctx, l); err != nil {
			return err
		}
		if len(aliases) >= batchKeys {
			if err := ix.st.noteAliases(ctx, aliases); err != nil {
				return err
			}
			aliases = aliases[:0]
		}
		return nil
	}
	row := func(key string) error {
		done++
		if testHookScanRow != nil {
			if err := testHookScanRow(done); err != nil {
				return fmt.Errorf("scan source: %w", err)
			}
		}
		if c, ok := ix.canonicalStored(key, &aliases); ok {
			if batch = append(batch, c); len(batch) == batchKeys {
				if err := send(); err != nil {
					return err
				}
			}
		} else {
			invalid++
		}
		if ix.cfg.Progress != nil && done%ix.cfg.ProgressEvery == 0 {
			ix.cfg.Progress(done, max(total.Load(), done))
		}
		return nil
	}
	hooks.row = row
	nulls, blobs, began, scanErr := ix.st.scan(ctx, hooks)
	counts.SkippedNull, counts.SkippedBlob = nulls, blobs
	if scanErr == nil && len(batch) > 0 {
		scanErr = send()
	}
	if !began { // no builder goroutine
		return nil, scanErr
	}
	if scanErr == nil {
		select {
		case batches <- buildMsg{end: true, rows: done + nulls + blobs}:
		case <-ctx.Done():
			scanErr = fmt.Errorf("scan source: %w", context.Cause(ctx))
		}
	}
	close(batches)
	if err := <-built; err != nil {
		return nil, fmt.Errorf("scan source: %w", err)
	}
	if scanErr != nil {
		return nil, scanErr
	}
	if err := ix.st.noteAliases(ctx, aliases); err != nil {
		return nil, err
	}
	if ix.cfg.Progress != nil {
		ix.cfg.Progress(done, done)
	}
	counts.Rows = done + counts.SkippedNull + counts.SkippedBlob
	counts.Keys, counts.SkippedText = done-invalid, invalid
	ix.m.scanned(counts)
	f, err := syncfilter.Thaw(b.Image())
	if err != nil {
		return nil, err
	}
	s := &serving{f: f, capacity: capacity}
	s.gen.Store(head)
	return s, nil
}
