package rebuild

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// Index answers, for one collection of a database, "was this record
// fetched?" (Fetched, Missing): from its filter when the filter covers the
// source, from SQLite otherwise, and never "fetched" on the filter's word
// alone. All its methods are safe for concurrent use.
//
// # Rules the code keeps
//
//   - No lock that a query, a callback or Close can wait for is held
//     across SQL, across a filter insert that waits, or while taking
//     another lock. Shared work (catching the filter up on the log,
//     reading the stored spellings) runs in a flight: one caller leads,
//     the others wait on a channel their ctx can abandon.
//   - No read path (Fetched, Missing, catch-up) needs the write
//     connection: writes (attaching, the alias table, snapshot records)
//     happen in Open, Rebuild, Save, Close and the database's worker.
//   - Every filter the index created is closed exactly once, by whoever
//     takes it out of the state (drop, replace, failed publish, Close);
//     a filter never published is closed by the rebuild or load that made
//     it.
//   - Close's context bounds its wait; work still running when it ends
//     (or parked in a callback of the app, such as Progress, which may
//     call Close) finishes without the caller, and the last of it releases
//     what the index holds.
//
// # Locks and owners
//
//	mu         the owner of the state: every transition of state (in
//	           state.go), lastAuto and autoTimer; held only to read and
//	           swap them, never while waiting for anything
//	act.mu     the count of work in progress (activity.go)
//	bg.mu      the count of rebuilds asked of the worker (rebuild.go), innermost
//	memo.mu    a memo's map of spellings (aliases.go), innermost
//	metrics.mu the metrics' last values (stats.go), innermost
//
// The database's locks (DB doc) are never taken while one of these is
// held. The goroutines an index uses are the database's (worker, filter
// writer), during a rebuild a builder and a counter that the rebuild
// waits for, and, once closing has no call left to wait for, one that
// saves and releases what the index holds (Close waits for it until its
// ctx ends).
type Index struct {
	id    uint64 // unique in the process: names the index's notes on reading connections
	db    *DB
	cfg   Source
	owned bool // Close closes db too: rebuild.Open opened it for this index

	ctx    context.Context    // of this index's background work; cancelled by Close
	cancel context.CancelFunc //
	act    activity           // public calls and background jobs in progress

	mu        sync.Mutex              // owner: transitions of state; lastAuto
	state     atomic.Pointer[state]   // stored only under mu; never nil
	lastAuto  time.Time               // under mu: when the last automatic rebuild was asked for
	autoTimer *time.Timer             // under mu: an automatic rebuild asked for later (autorebuild.go)
	bound     atomic.Pointer[binding] // the source as last resolved (call.go)
	aliasHint atomic.Bool             // the alias table had a row at the last probe: confirm through it
	memo      atomic.Pointer[memo]    // stored spellings beyond the alias table (aliases.go)
	follow    flight                  // catching the filter and the memo up on the log
	memoing   flight                  // building a memo

	targetErr   atomic.Pointer[error]   // why snapshot saves are refused, if they are
	savedGen    atomic.Uint64           // generation of the last snapshot saved or loaded
	holding     atomic.Pointer[holding] // the source this index holds (syncfilter_holders)
	opened      atomic.Bool             // open has ended: later calls ask the worker for repairs
	cron        bool                    // BuildSnapshot's index: a refused snapshot path fails the rebuild
	cronSaved   bool                    // the cron job's snapshot was saved (its goroutine alone reads and writes it)
	lazy        bool                    // opened by DB.Index: the snapshot loads after open (ensureLoaded)
	pendingLoad atomic.Bool             // the opening load has not run yet
	loading     flight                  // the opening load
	why         atomic.Pointer[string]  // why the rebuild asked of the worker is due
	bg          pending                 // rebuilds asked of the worker and not finished (Wait)

	ready chan struct{} // closed when the opening rebuild or load attempt has ended
	once  sync.Once

	m metrics
}

// Open opens the database and the index of one collection; Close closes
// both. For several collections of one database, use OpenDB and
// DB.Index. See DB.Index for what opening does.
func Open(ctx context.Context, dcfg DBConfig, src Source) (*Index, error) {
	db, err := openDB(ctx, dcfg, src.Table == "")
	if err != nil {
		return nil, err
	}
	first := db.cur.Load().st
	ix, err := db.index(ctx, src, true)
	if err != nil {
		if db.Close(context.WithoutCancel(ctx)) == nil {
			first.RemoveCreated() // a failed Open leaves no database it created
		}
		return nil, err
	}
	return ix, nil
}

// Index opens the index of one collection of the database. It checks the
// source before the first write (the table, a stored key column of TEXT
// affinity and BINARY collation, an index on it), attaches it if needed
// (triggers that log every insert, in one transaction), and makes the
// filter ready: from the snapshot if the database vouches for it (then
// caught up on every key committed after it), otherwise by scanning.
//
// The first open of a source scans it before returning (nothing could
// vouch for the rows already there); if that scan fails or ctx ends, what
// this open added to the database is removed again. A process killed
// outright (SIGKILL, a power cut) cannot remove it: the source stays
// attached and unscanned, the next open scans it, and Detach removes it
// (forced until the killed process's scan lease and hold expire: see
// Detach). Later, a snapshot
// that is missing, damaged, foreign or stale is not an error: the index
// serves every query from SQLite and rebuilds in the background (see
// Source.AutoRebuild, Wait, Stats.SnapshotError); a snapshot path
// the library may not write to is reported there too, and nothing is
// saved to it.
//
// The snapshot is loaded just after Index returns, by the database's
// worker or by the first call that needs the filter, whichever comes
// first: opening ten collections costs their checks, not ten loads, and no
// collection's first call waits for another's load (rebuild.Open, one
// collection, loads before it returns).
func (db *DB) Index(ctx context.Context, src Source) (*Index, error) {
	return db.index(ctx, src, false)
}

func (db *DB) index(ctx context.Context, src Source, owned bool) (*Index, error) {
	ix, err := db.newIndex(src, owned)
	if err != nil {
		return nil, err
	}
	ix.lazy = !owned
	if err := ix.open(ctx); err != nil {
		ix.cancel()
		_ = ix.close(context.WithoutCancel(ctx))
		return nil, err
	}
	return ix, nil
}

// newIndex makes an index of src in bypass and registers it with db.
func (db *DB) newIndex(src Source, owned bool) (*Index, error) {
	src, err := src.withDefaults(db.cfg.ReadOnly)
	if err != nil {
		return nil, err
	}
	if src.Snapshot != "" {
		// Resolved once, like the database's path: a later chdir changes
		// nothing.
		if src.Snapshot, err = filepath.Abs(src.Snapshot); err != nil {
			return nil, fmt.Errorf("resolve snapshot path: %w", err)
		}
	}
	ix := &Index{id: newID(), db: db, cfg: src, owned: owned, ready: make(chan struct{})}
	ix.ctx, ix.cancel = context.WithCancel(db.ctx)
	ix.m.started = time.Now()
	ix.state.Store(&state{mode: modeBypass})
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closing {
		return nil, ErrClosed
	}
	db.indexes[ix] = struct{}{}
	return ix, nil
}

// open attaches the source and makes the filter ready (see DB.Index).
func (ix *Index) open(ctx context.Context) (err error) {
	if err := ix.enter(); err != nil {
		return err
	}
	defer ix.leave()
	c, err := ix.look(ctx)
	if err != nil {
		return err
	}
	defer c.end()
	readOnly := ix.db.cfg.ReadOnly
	src := c.b.src
	switch {
	case readOnly && (!src.Logged || !src.Scanned):
		ix.m.setSnapshotError(errors.New("no complete record of this source in the database (attach it with a writable open or `syncfilter rebuild`)"))
	case !src.Logged || !src.Scanned:
		// The first open of the source (or one after its triggers were
		// lost): nothing vouches for the rows already there. Attach, and
		// scan before answering.
		c.putReader() // the scan and its count take their own
		if err := ix.rebuild(ctx, "first scan"); err != nil && ix.filter() == nil {
			return fmt.Errorf("open index: %w", err)
		}
	default:
		if ix.cfg.Snapshot != "" && !readOnly {
			ix.checkTarget(c.f, src)
		}
		ix.hold(c.f, src)
		ix.opened.Store(true)
		if ix.cfg.Snapshot == "" {
			ix.loaded(errors.New("no snapshot configured"))
			return nil
		}
		if ix.lazy && ix.db.work != nil {
			// DB.Index: the worker loads the snapshot soon, and the first
			// call that needs the filter before that loads it itself
			// (ensureLoaded): opening many collections costs what their
			// checks cost, and no collection waits for another's load.
			ix.pendingLoad.Store(true)
			ix.db.work.ask(jobLoad, ix)
			return nil
		}
		ix.loaded(ix.load(ctx, c))
		return nil
	}
	ix.opened.Store(true)
	ix.markReady()
	return nil
}

// loaded ends the opening load with its outcome: serving from the
// snapshot (err nil), or from SQLite with a rebuild asked for.
func (ix *Index) loaded(err error) {
	if err != nil {
		ix.m.setSnapshotError(err)
		if !ix.cfg.AutoRebuild.Off && !ix.db.cfg.ReadOnly {
			ix.askRebuild("the snapshot could not be used")
			return // ready once the rebuild ran
		}
	}
	ix.markReady()
}

// ensureLoaded loads the snapshot of an index opened by DB.Index if its
// load is still pending: the first caller loads it, the others (and the
// worker) wait for that (a flight).
func (ix *Index) ensureLoaded(ctx context.Context, c *call) error {
	done := func() bool { return !ix.pendingLoad.Load() }
	return ix.loading.do(ctx, done, c.putReader, func() error {
		if !ix.pendingLoad.Load() {
			return nil
		}
		ix.loaded(ix.load(ctx, c))
		ix.pendingLoad.Store(false)
		return nil
	})
}

func (ix *Index) markReady() { ix.once.Do(func() { close(ix.ready) }) }

// Wait blocks until the index is past its opening rebuild or load and no
// rebuild it asked its worker for (a snapshot refused, a filter dropped,
// the triggers put back, a filter due) is pending or running, then
// returns the error of the last rebuild, if it failed. Once Close began,
// it returns ErrClosed.
func (ix *Index) Wait(ctx context.Context) error {
	select {
	case <-ix.ready:
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-ix.ctx.Done():
		return ErrClosed
	}
	for {
		ch := ix.bg.wait()
		if ch == nil {
			if ix.act.closed() {
				return ErrClosed
			}
			return ix.m.lastRebuildError()
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-ix.ctx.Done():
			return ErrClosed
		}
	}
}

// Close stops this index's background work and waits for it and for the
// calls in progress (ctx bounds the wait), saves the filter if a snapshot
// file is configured and the filter covers more than the file does, and
// releases the filter. An index from rebuild.Open closes its database
// too. When ctx ends first, Close returns its error and the rest
// finishes without the caller as the last call ends. Calls after Close
// return ErrClosed. Close may be called from a callback (Progress): it
// does not wait for the work running the callback.
func (ix *Index) Close(ctx context.Context) error {
	if ix.owned {
		return ix.db.Close(ctx)
	}
	return ix.close(ctx)
}

// close closes the index alone.
func (ix *Index) close(ctx context.Context) error {
	ix.cancel()
	return ix.act.close(ctx, func() { ix.final(context.WithoutCancel(ctx)) })
}

// final saves and releases what the index holds, once no call is in
// progress.
func (ix *Index) final(ctx context.Context) {
	if s := ix.filter(); s != nil && ix.cfg.Snapshot != "" && !ix.cfg.NoSaveOnClose && s.gen.Load() > ix.savedGen.Load() {
		if err := ix.saveNow(ctx, s); err != nil {
			ix.m.setError(fmt.Errorf("close index: %w", err))
		}
	}
	if s := ix.toClosed(); s != nil {
		_ = s.f.Close()
	}
	ix.mu.Lock()
	if ix.autoTimer != nil {
		ix.autoTimer.Stop()
		ix.autoTimer = nil
	}
	ix.mu.Unlock()
	ix.unhold()
	ix.bg.release()
	ix.markReady()
	ix.db.forget(ix)
}

// enter and leave bracket every public call and background job.
func (ix *Index) enter() error {
	if !ix.act.enter() {
		return ErrClosed
	}
	return nil
}

func (ix *Index) leave() { ix.act.leave() }

// hold records in the database that this index holds src, so that Detach
// refuses to pull it away (writable indexes only). The worker writes it,
// soon: a write costs a commit (an fsync), which the open path need not
// wait for; a Detach in between wins, and the index notices.
func (ix *Index) hold(f *file, src *store.Source) {
	if ix.db.cfg.ReadOnly || ix.db.work == nil {
		return
	}
	h := &holding{f: f, src: src}
	if old := ix.holding.Swap(h); old != nil && old.f == f && old.src.ID == src.ID && old.written.Load() {
		h.written.Store(true) // the same row: Close removes it even if the worker has not rewritten it yet
	}
	ix.db.work.ask(jobHold, ix)
}

// renewHold renews the index's hold (the worker does, every third of its
// term).
func (ix *Index) renewHold() {
	h := ix.holding.Load()
	if h == nil || !h.f.acquire() {
		return
	}
	defer h.f.release()
	ctx, cancel := context.WithTimeout(ix.db.ctx, ix.db.cfg.BusyTimeout+time.Second)
	defer cancel()
	if h.f.st.Hold(ctx, h.src, ix.db.token, ix.db.holder, time.Now().Add(store.LeaseTerm)) == nil {
		h.written.Store(true)
		switch cur := ix.holding.Load(); {
		case cur == nil: // Close let go of it while it was being written: unhold saw nothing to remove
			h.f.st.Unhold(context.Background(), h.src, ix.db.token)
		case cur != h && cur.f == h.f && cur.src.ID == h.src.ID: // replaced meanwhile (attached again): the same row
			cur.written.Store(true)
		}
	}
}

// unhold removes the index's hold, if it was written (an index closed
// before the worker wrote it costs no write; one the worker was writing
// meanwhile, the worker removes).
func (ix *Index) unhold() {
	h := ix.holding.Swap(nil)
	if h == nil || !h.written.Load() || !h.f.acquire() {
		return
	}
	defer h.f.release()
	h.f.st.Unhold(context.Background(), h.src, ix.db.token)
}

// holding is the source an index holds, in the file it holds it in.
type holding struct {
	f       *file
	src     *store.Source
	written atomic.Bool // the database records it
}
