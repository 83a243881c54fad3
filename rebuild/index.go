package rebuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/syncfilter/syncfilter/rebuild/internal/work"
)

// Index answers, for one collection of a database, "was this record
// fetched?" (Fetched, Missing): from its filter when the filter covers the
// source, from SQLite otherwise, and never "fetched" on the filter's word
// alone. All its methods are safe for concurrent use.
//
// # Rules the code keeps
//
//   - The call pays only for its answer. Loading the snapshot, catching
//     the filter up on the log between calls, re-attaching after a
//     migration, refilling after a restore and rebuilding run in the
//     background (the database's worker and follower); meanwhile calls
//     are answered exactly from SQLite. A call that still finds the
//     filter behind takes the few entries it lacks, or, when that would
//     cost more, confirms the filter's "absent" keys in SQLite too.
//   - No lock that a query, a callback or Close can wait for is held
//     across SQL, across a filter insert that waits, or while taking
//     another lock outside the one order of docs/ARCHITECTURE.md. Shared
//     work runs in a flight: one caller leads, the others wait on a
//     channel their ctx can abandon, and take its outcome.
//   - No read path (Fetched, Missing, catch-up) writes: writes
//     (attaching, the spellings table, snapshot records, compaction)
//     happen in Open, Rebuild, Save, Close and the worker. A read takes
//     the write connection only to roll back a hot journal a crashed
//     writer left (its reading connection is read-only).
//   - Every filter the index created is closed exactly once, by whoever
//     takes it out of the state (drop, replace, failed publish, Close);
//     a filter never published is closed by the rebuild or load that made
//     it.
//   - Close's context bounds its wait; work still running when it ends
//     (or parked in a callback of the app, such as Progress, which may
//     call anything) finishes without the caller, and the last of it
//     releases what the index holds.
type Index struct {
	id    uint64 // unique in the process: names the index's notes on reading connections
	db    *DB
	cfg   Source
	owned bool // Close closes db too: rebuild.Open opened it for this index

	life lifetime // its background work's context, and the work in progress, for Close

	mu struct {
		sync.Mutex                       // owner of the state: every transition (state.go); held only to swap it
		state      atomic.Pointer[state] // stored only under the Mutex, read lock-free; never nil
	}
	bound atomic.Pointer[binding] // the source as last resolved (call.go)

	sp    spellings // the stored spellings that are not NFC (spellings.go)
	costs costs     // what taking log entries in and confirming keys cost here (costs.go)
	up    upkeep    // background work asked for, and the catch-up flight (upkeep.go)
	rb    rebuilder // rebuilds: the index's turn, automatic rebuilds (rebuilder.go, autorebuild.go)
	snap  snapshots // where snapshots may be saved, and what was saved (snapshots.go)
	m     metrics
}

// lifetime is an index's (or a database's) life: the context of its
// background work, cancelled by Close, and the public calls and jobs in
// progress (work.Life), which Close waits for.
type lifetime struct {
	work.Life
	ctx    context.Context
	cancel context.CancelFunc
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
// affinity and BINARY collation, an index on it) and returns: the filter
// is made ready in the background, from the snapshot if the database
// vouches for it (then caught up on every key committed after it),
// otherwise by attaching the source if needed (triggers that log every
// insert, in one transaction) and scanning it, and until it is, every
// call is answered exactly from SQLite. An empty table (an app before its
// first sync) and the library's own table are attached and scanned before
// Index returns, so that a filter serves from the first call. The snapshot is loaded once the first call is
// answered (so that it does not share the machine with that call), or
// when Wait asks; a scan starts at once. Wait waits for it; Stats says
// what is happening.
//
// A snapshot that is missing, damaged, foreign or stale is not an error:
// the index serves from SQLite and rebuilds (Stats.SnapshotError says
// why; see Source.AutoRebuild). A snapshot path the library may not write
// to is reported there too, and nothing is saved to it. The first scan
// of a source this open attached runs in the background too; if it
// fails, what the attach added to the database is removed again (Wait
// returns why). A background rebuild that fails with no filter serving
// (the first scan, say, while the app writes without pause and SQLite
// reports the database locked) is tried again at the first call after a
// wait that doubles with each failure, from a second to five minutes,
// attaching the source again if its attach was undone; an idle app runs
// nothing meanwhile. A process killed outright before that scan completes
// leaves the source attached and unscanned: the next open scans it, and
// Detach removes it.
func (db *DB) Index(ctx context.Context, src Source) (*Index, error) {
	return db.index(ctx, src, false)
}

func (db *DB) index(ctx context.Context, src Source, owned bool) (*Index, error) {
	ix, err := db.newIndex(src, owned)
	if err != nil {
		return nil, err
	}
	if err := ix.open(ctx); err != nil {
		ix.life.cancel()
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
	ix := &Index{id: newID(), db: db, cfg: src, owned: owned}
	ix.life.ctx, ix.life.cancel = context.WithCancel(db.life.ctx)
	ix.mu.state.Store(&state{mode: modeBypass})
	ix.rb.init()
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.mu.closing {
		return nil, ErrClosed
	}
	db.mu.indexes[ix] = struct{}{}
	return ix, nil
}

// open checks and attaches the source and asks the worker to make the
// filter ready (see DB.Index).
func (ix *Index) open(ctx context.Context) error {
	if err := ix.enter(); err != nil {
		return err
	}
	defer ix.leave()
	c, err := ix.look(ctx)
	if err != nil {
		return fmt.Errorf("open index: %w", err)
	}
	defer c.end()
	src := c.b.src
	switch {
	case ix.db.cfg.ReadOnly:
		if !src.Logged || !src.Scanned {
			ix.m.setSnapshotError(errors.New("no complete record of this source in the database (attach it with a writable open or `syncfilter rebuild`)"))
			return nil
		}
		if ix.cfg.Snapshot == "" {
			ix.m.setSnapshotError(errors.New("no snapshot configured"))
			return nil
		}
		ix.askLoad()
	case !src.Logged && !src.Own:
		if empty, err := c.empty(ctx); err != nil || !empty {
			// The first open of a table that holds rows (or one after
			// its triggers were lost): the worker attaches it and scans
			// it, in that order, so that every row is in the scan or the
			// log; calls are answered from SQLite meanwhile, and the app's
			// writes never make this open wait for the write lock.
			ix.askRebuild(reason{text: "first scan"})
			return nil
		}
		fallthrough
	case !src.Logged:
		// The library's own table, or an empty table (an app before its
		// first sync): attached and scanned now, so that a filter serves
		// from the first call.
		s, info, err := c.f.st.Attach(ctx, ix.cfg.Table, ix.cfg.Column, ix.cfg.AllowUnindexed)
		if err != nil {
			return fmt.Errorf("open index: %w", err)
		}
		if info.Reattached {
			ix.m.reattached.Add(1)
		}
		if info.Created {
			ix.up.created.Store(s)
		}
		c.b = ix.rebindTo(c, s)
		return ix.firstScan(ctx, c)
	case !src.Scanned:
		return ix.firstScan(ctx, c)
	case ix.cfg.Snapshot != "":
		ix.checkTarget(c.f, src)
		ix.askLoad()
	default:
		ix.m.setSnapshotError(errors.New("no snapshot configured"))
		ix.askRepair("no snapshot configured")
	}
	return nil
}

// askLoad asks for the opening load: once the first call is answered
// when the snapshot file is there (worker.askAfterCall), at once when it
// is not (the load finds nothing to load and asks for a rebuild, which
// takes long: it starts right away).
func (ix *Index) askLoad() {
	if _, err := os.Stat(ix.cfg.Snapshot); err == nil && !ix.db.cfg.knobs.noDeferredLoad {
		ix.db.work.askAfterCall(jobLoad, ix)
		return
	}
	ix.db.work.ask(jobLoad, ix)
}

// firstScan asks for the first scan of the source, in the background; an
// empty table (the library's own, just created; an app's before its
// first sync) is scanned at once, so that its filter serves from the
// first call. A scan at once that fails fails the open.
func (ix *Index) firstScan(ctx context.Context, c *call) error {
	empty, err := c.empty(ctx)
	if err != nil || !empty {
		ix.askRebuild(reason{text: "first scan"})
		return nil
	}
	c.putReader()
	rctx, done, err := ix.db.suspendable(ctx)
	if err != nil { // suspended: the worker scans it after Resume
		ix.askRebuild(reason{text: "first scan"})
		return nil
	}
	wait, err := ix.rebuild(rctx, reason{text: "first scan"})
	suspended := err != nil && interrupted(rctx)
	done()
	ix.life.Park(1) // its last Progress call may Suspend or Close the database, which waits for this open
	p := wait()
	ix.life.Park(-1)
	if p != nil {
		panic(p)
	}
	if suspended { // interrupted by Suspend: the worker scans it after Resume
		ix.askRebuild(reason{text: "first scan"})
		return nil
	}
	if err != nil && ix.filter() == nil {
		return fmt.Errorf("open index: %w", err)
	}
	return nil
}

// Wait blocks until no background work asked for the index (the opening
// load or first scan, a rebuild it asked for, a refill) is pending or
// running, then, if a filter serves, until it has taken in every entry
// logged up to now, and returns nil; or it returns why none serves: the
// last rebuild's error, or an error wrapping ErrNotServing with the
// reason the snapshot was not used (Stats.SnapshotError) when the index
// does not rebuild by itself. A filter that serves while its snapshot
// could not be saved is not an error here (Stats.LastError says). Once
// Close began, it returns ErrClosed.
func (ix *Index) Wait(ctx context.Context) error {
	ix.db.work.called(ix)
	for {
		if ix.life.Closing() {
			return ErrClosed
		}
		if ch := ix.up.busy(); ch != nil {
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-ix.life.ctx.Done():
				return ErrClosed
			}
		}
		if ix.filter() == nil {
			break
		}
		// Current too: every entry logged up to now taken in, as work of
		// the index (Suspend and Close wait for it). A catch-up that
		// finds the filter can no longer serve drops it and asks for a
		// rebuild: Wait waits for that too.
		if err := ix.enter(); err != nil {
			return err
		}
		err := ix.catchUpNow(ctx)
		ix.leave()
		if err != nil {
			return fmt.Errorf("wait: %w", err)
		}
		if ix.filter() != nil {
			return nil
		}
	}
	if ix.life.Closing() {
		return ErrClosed // Close began while Wait looked: no filter will serve
	}
	if err := ix.m.lastRebuildError(); err != nil {
		return fmt.Errorf("wait: %w: %w", ErrNotServing, err)
	}
	if err := ix.Stats().SnapshotError; err != nil {
		return fmt.Errorf("wait: %w (%w)", ErrNotServing, err)
	}
	return fmt.Errorf("wait: %w", ErrNotServing)
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
	ix.life.cancel()
	return ix.life.Close(ctx, func() { ix.final(context.WithoutCancel(ctx)) })
}

// final saves and releases what the index holds, once no call is in
// progress.
func (ix *Index) final(ctx context.Context) {
	if s := ix.filter(); s != nil && ix.cfg.Snapshot != "" && !ix.cfg.NoSaveOnClose && s.at.gen() > ix.snap.saved.Load() && !ix.db.suspended() {
		if err := ix.saveNow(ctx, s); err != nil {
			ix.m.setError(fmt.Errorf("close index: %w", err))
		}
	}
	if s := ix.toClosed(); s != nil {
		_ = s.f.Close()
	}
	ix.rb.stopTimer()
	ix.up.release()
	ix.db.forget(ix)
}

// enter and leave bracket every public call and background job.
func (ix *Index) enter() error {
	if !ix.life.Enter() {
		return ErrClosed
	}
	return nil
}

func (ix *Index) leave() { ix.life.Leave() }

// enterCall is enter for a call of the app (Missing, Fetched,
// MarkFetched): Suspend waits only for the calls that began before it.
func (ix *Index) enterCall() (work.Call, error) {
	c, ok := ix.life.EnterCall()
	if !ok {
		return c, ErrClosed
	}
	return c, nil
}
