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

// scan builds an unpublished filter from one consistent read of the
// source (store.scan): every row committed up to the read's generation is
// scanned, everything later is in the log after it.
func (ix *Index) scan(ctx context.Context, l *lease) (*serving, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		fb      *filterBuilder // read after built
		head    uint64
		counts  ScanCounts
		total   atomic.Int64 // rows estimated, then counted: for progress
		done    int64
		invalid int64
		aliases [][2]string
		batch   = make([]string, 0, batchKeys)
		batches = make(chan buildMsg, 4)
		built   = make(chan error, 1)
	)
	hooks := scanHooks{
		begin: func(gen uint64, estimate int64) error {
			head = gen
			total.Store(estimate)
			fb = ix.startBuilder(ctx, cancel, batches, built, &total)
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
	f, err := syncfilter.Thaw(fb.b.Image())
	if err != nil {
		return nil, err
	}
	s := &serving{f: f, capacity: fb.capacity}
	s.gen.Store(head)
	return s, nil
}
