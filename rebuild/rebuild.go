package rebuild

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// testHookScanRow, when set by tests, runs when a scan begins (n = 0) and
// with every chunk of keys it reads, given the keys read so far; an error
// it returns fails the scan as a SQLite error would.
var testHookScanRow func(n int64) error

// Rebuild replaces the filter with one built from a full scan of the
// source:
//
//	bypass (every query about this collection → SQLite) → scan (the keys
//	read in chunks, hashed and set by a builder goroutine) → record the
//	scan and the stored spellings found → publish (one atomic pointer
//	store) → save the snapshot → compact the log.
//
// If the source's triggers were lost (the app's migration dropped or
// moved them), it attaches the source again first. If the scan fails or
// ctx ends, the half-built filter is dropped, never served, and the
// previous filter (or bypass) answers again. If only the save fails, the
// new filter serves (it is complete) and the error is returned. Rebuilds
// of the collections of a database take turns: a second call waits for
// the first (ctx bounds the wait). Close stops a rebuild at its next
// chunk of keys, and a call waiting for its turn (ErrClosed).
func (ix *Index) Rebuild(ctx context.Context) error {
	if err := ix.enter(); err != nil {
		return err
	}
	defer ix.leave()
	if ix.db.cfg.ReadOnly {
		return fmt.Errorf("rebuild: %w", ErrReadOnly)
	}
	return ix.rebuild(ctx, "asked by the app")
}

// background runs a rebuild the worker was asked for.
func (ix *Index) background() {
	ix.bg.start()
	defer ix.bg.done()
	if ix.enter() != nil {
		return
	}
	defer ix.leave()
	defer ix.markReady()
	reason := "asked for"
	if why := ix.why.Swap(nil); why != nil {
		reason = *why
	}
	_ = ix.rebuild(context.WithValue(ix.ctx, onWorker{}, true), reason) // the error is kept in the metrics
}

// backgroundLoad runs the opening load of an index from DB.Index, unless a
// call ran it first.
func (ix *Index) backgroundLoad() {
	if ix.enter() != nil {
		return
	}
	defer ix.leave()
	if c, err := ix.look(ix.ctx); err == nil { // look loads it (ensureLoaded)
		c.end()
	} else if ix.pendingLoad.Swap(false) {
		ix.loaded(err)
	}
}

// askRebuild asks the database's worker for a rebuild of this collection
// (callers check NoBackgroundRebuild or NoAutoRebuild).
func (ix *Index) askRebuild(why string) {
	if ix.db.work == nil || ix.act.closed() {
		return
	}
	ix.why.Store(&why)
	ix.bg.ask()
	ix.db.work.ask(jobRebuild, ix)
}

// pending counts the rebuilds asked of the worker and not finished, for
// Wait.
type pending struct {
	mu     sync.Mutex    // guards the fields below
	n      int           // asked and not finished
	queued bool          // one is asked and has not started
	idle   chan struct{} // closed when n drops to 0
}

func (p *pending) ask() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.queued {
		p.queued = true
		p.n++
	}
}

func (p *pending) start() {
	p.mu.Lock()
	p.queued = false
	p.mu.Unlock()
}

func (p *pending) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n > 0 {
		p.n--
	}
	if p.n == 0 && p.idle != nil {
		close(p.idle)
		p.idle = nil
	}
}

// wait returns a channel closed once no rebuild is pending (nil if none).
func (p *pending) wait() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		return nil
	}
	if p.idle == nil {
		p.idle = make(chan struct{})
	}
	return p.idle
}

// release ends every wait (Close: nothing pending will run).
func (p *pending) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n, p.queued = 0, false
	if p.idle != nil {
		close(p.idle)
		p.idle = nil
	}
}

// takeRebuildTurn waits for the database's rebuild turn (ctx bounds the
// wait, and so does Close: the rebuild holding the turn may be parked in
// a callback that is closing this index); dropRebuildTurn gives it back.
func (ix *Index) takeRebuildTurn(ctx context.Context) error {
	select {
	case ix.db.rebuilds <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-ix.ctx.Done():
		return ErrClosed
	}
}

func (ix *Index) dropRebuildTurn() { <-ix.db.rebuilds }

// rebuild takes the database's rebuild turn, attaches the source if its
// triggers are not in place, and rebuilds. A first attach whose rebuild
// fails (or whose ctx ends: SIGINT in the cron job) is undone, leaving the
// database as it was.
func (ix *Index) rebuild(ctx context.Context, why string) (err error) {
	start := time.Now()
	defer func() {
		if err != nil {
			err = fmt.Errorf("rebuild: %w", err)
			ix.m.rebuildFailed(err)
		}
	}()
	if err := ix.takeRebuildTurn(ctx); err != nil {
		return err
	}
	defer ix.dropRebuildTurn()
	c, err := ix.look(ctx)
	if err != nil {
		return err
	}
	defer c.end()
	if c.b.err != nil {
		return c.b.err
	}
	c.putReader() // the scan and its count take their own
	f, src := c.f, c.b.src
	if ix.cfg.Snapshot != "" {
		ix.checkTarget(f, src)
		if terr := ix.targetError(); terr != nil && ix.cron {
			return terr // the cron job's only product is the file: refuse before any write
		}
	}
	var info store.AttachInfo
	if !src.Logged {
		if src, info, err = f.st.Attach(ctx, ix.cfg.Table, ix.cfg.Column, ix.cfg.AllowUnindexed); err != nil {
			return err
		}
		if info.Reattached {
			ix.m.reattached.Add(1)
		}
		ix.hold(f, src)
	}
	err = ix.rebuildWith(ctx, f, src, why, start)
	// The cron job's first attach is undone whenever it fails before its
	// snapshot is saved: its filter dies with it (SIGINT after the scan).
	if err != nil && info.Created && (ix.filter() == nil || ix.cron && !ix.cronSaved) {
		if uerr := f.st.Undo(ctx, src); uerr != nil {
			err = errors.Join(err, fmt.Errorf("undo the attach: %w", uerr))
		}
		ix.unhold()
	}
	return err
}

// rebuildWith rebuilds the filter of src in f; the caller holds the turn.
func (ix *Index) rebuildWith(ctx context.Context, f *file, src *store.Source, why string, start time.Time) error {
	// The lease keeps log compaction (by any process) from deleting the
	// entries this rebuild catches up from.
	l, err := f.st.TakeLease(ctx, src)
	if err != nil {
		return err
	}
	defer f.st.ReleaseLease(ctx, src, l)
	if !ix.startRebuilding() {
		return ErrClosed
	}
	bypassed := time.Now()
	// The schema the filter is built in, read before the scan reads the
	// log's head: a change after it (a restore) is seen by refill.
	schema, err := f.st.Schema(ctx)
	if err != nil {
		ix.restore()
		return err
	}
	s, aliases, err := ix.scan(ctx, f, src, l, why)
	if err != nil {
		ix.restore()
		return err
	}
	s.schema.Store(schema)
	prev, ok := ix.publish(s)
	if !ok {
		_ = s.f.Close()
		return ErrClosed
	}
	if prev != nil {
		_ = prev.f.Close()
	}
	ix.m.rebuildDone(start, time.Since(bypassed), why, nil)
	// The filter serves; now the database's records, which only writes
	// (and so may wait for the app's transactions) need.
	if err := f.st.MarkScanned(ctx, src, s.epoch, s.gen.Load(), aliases); err != nil {
		return err
	}
	if ix.cfg.Snapshot == "" {
		return nil
	}
	if ix.checkTarget(f, src); errors.Is(ix.targetError(), ErrUnsafeTarget) && !ix.cron {
		return nil // a file that is not the library's: reported in Stats.SnapshotError, never replaced
	}
	if err := ix.saveNow(ctx, s); err != nil {
		return err
	}
	if ix.cron {
		ix.cronSaved = true
	}
	if saved := ix.savedGen.Load(); saved > ix.cfg.LogRetain {
		return f.st.Compact(ctx, src, saved-ix.cfg.LogRetain)
	}
	return nil
}

// scan builds an unpublished filter from a full read of the source
// (store.DB.Scan): every row committed before the scan's head is read,
// everything later is in the log after it. The stored spellings that are
// not NFC go to the alias table, and the source is recorded as scanned up
// to the head, in the epoch the head was read in.
func (ix *Index) scan(ctx context.Context, f *file, src *store.Source, l *store.Lease, why string) (_ *serving, aliases [][2]string, _ error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
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
	hooks := store.ScanHooks{
		Begin: func(h store.Head, estimate int64) error {
			if testHookScanRow != nil {
				if err := testHookScanRow(0); err != nil {
					return fmt.Errorf("scan source: %w", err)
				}
			}
			head, began = h, true
			total.Store(estimate)
			prev := ix.get().filter // the filter being replaced, if any
			auto := strings.HasPrefix(why, autoPrefix)
			fb = ix.startBuilder(ctx, cancel, f, src, batches, built, &total,
				func(rows int64) uint64 { return ix.sizeFor(rows, prev, auto) })
			return nil
		},
		Keys: func(keys []string) error {
			if ix.act.closed() {
				// Close began (maybe in the last Progress call): the
				// filter would never serve.
				return ErrClosed
			}
			if err := context.Cause(ctx); err != nil {
				// Cancelled (SIGINT in the cron job): stop at this chunk,
				// whether or not SQLite noticed the interrupt in time.
				return err
			}
			batch := make([]string, 0, len(keys))
			for _, k := range keys {
				c, err := canonicalStored(k)
				if err != nil {
					invalid++
					ix.m.skipped.Add(1) // no query can name it
					continue
				}
				if c != k {
					aliases = append(aliases, [2]string{c, k})
				}
				batch = append(batch, c)
			}
			done += int64(len(keys))
			if testHookScanRow != nil {
				if err := testHookScanRow(done); err != nil {
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
			if len(aliases) >= batchKeys {
				if err := f.st.AddAliases(ctx, src, head.Epoch, aliases); err != nil {
					return err
				}
				aliases = aliases[:0]
			}
			if done-shown >= ix.cfg.ProgressEvery {
				shown = done
				ix.progress(ctx, done, max(total.Load(), done))
			}
			return nil
		},
	}
	counts, scanErr := f.st.Scan(ctx, src, hooks)
	if !began { // no builder goroutine
		return nil, nil, scanErr
	}
	if scanErr == nil {
		select {
		case batches <- buildMsg{end: true, rows: done + counts.Nulls + counts.Blobs + counts.Long}:
		case <-ctx.Done():
			scanErr = context.Cause(ctx)
		}
	}
	close(batches)
	if err := <-built; err != nil {
		return nil, nil, fmt.Errorf("scan source: %w", err)
	}
	if scanErr != nil {
		return nil, nil, scanErr
	}
	ix.progress(ctx, done, done)
	rows := done + counts.Nulls + counts.Blobs + counts.Long
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
	s.gen.Store(head.Seq)
	s.floor.Store(head.Floor)
	return s, aliases, nil
}

// batchKeys is how many stored spellings a scan gathers before it writes
// them to the alias table.
const batchKeys = 4096

// onWorker marks the context of a rebuild the worker runs.
type onWorker struct{}

// progress calls Source.Progress, parked: a callback may call Close, which
// then does not wait for the work running the callback (the worker's loop
// included, when the worker runs it).
func (ix *Index) progress(ctx context.Context, done, total int64) {
	if ix.cfg.Progress == nil {
		return
	}
	ix.act.park(1)
	defer ix.act.park(-1)
	if ctx.Value(onWorker{}) != nil {
		ix.db.act.park(1)
		defer ix.db.act.park(-1)
	}
	ix.cfg.Progress(done, total)
}
