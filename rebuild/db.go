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

// DB is one database file opened once, from which the index of each
// collection is taken (Index). Everything the collections of a database
// need is shared: one writing connection, a few reading ones
// (DBConfig.Readers), one file check, one goroutine that applies the
// filters' bit changes, one worker for loads and rebuilds, and one
// follower that keeps filters current between calls; so ten collections
// cost what one does, and rebuilds of different collections never scan
// at the same time (peak memory is the largest rebuild's, not the sum).
//
// Its goroutines, their locks and the one order they are taken in are
// listed in docs/ARCHITECTURE.md ("Locks and goroutines").
type DB struct {
	cfg    DBConfig
	drv    *store.Driver        // the app's SQLite driver
	path   store.Path           // resolved at open
	life   lifetime             // its background work's context, and the work in progress (the worker, the follower), for Close
	writer *syncfilter.Writer   // applies the bit changes of every filter
	cur    atomic.Pointer[file] // the file at the path; replaced when the app replaces it, nil once closed

	reopening chan struct{} // capacity 1: one reopen of a replaced file at a time (file.go)
	scans     chan struct{} // capacity 1: one rebuild scan at a time in the database (rebuilder.go)

	work   *worker      // loads, refills and rebuilds (worker.go)
	follow follower     // catches filters up between calls (follow.go)
	calls  atomic.Int32 // the app's Fetched and Missing in progress: a rebuild's scan gives them the machine (yieldToCalls)

	mu struct {
		sync.Mutex // guards the fields below
		indexes    map[*Index]struct{}
		closing    bool
		ended      bool // the DB's own work ended: the last index to finish closing releases what the DB holds
		suspended  bool // between Suspend and Resume (or Close)
		// interrupt cancels, with errSuspended, each of the app's
		// rebuilds in progress (suspendable), for Suspend.
		interrupt map[uint64]context.CancelCauseFunc
	}
}

// OpenDB opens a database for the indexes of its collections, through
// the app's SQLite driver (DBConfig.Driver). The path is resolved once
// (see DBConfig.Path); a file with more than one name is refused
// (ErrHardLinked); the app's *sql.DB (DBConfig.DB), if given, must be a
// handle on that very file, through a driver of the same type as
// DBConfig.Driver's (ErrAppDBMismatch). The journal mode is the app's: nothing here changes
// it, and every mode works (WAL is recommended: readers then run beside
// writers).
func OpenDB(ctx context.Context, cfg DBConfig) (*DB, error) {
	return openDB(ctx, cfg, false)
}

// openDB is OpenDB; create lets the library's own table start a new
// database file.
func openDB(ctx context.Context, cfg DBConfig, create bool) (*DB, error) {
	ablateDefaults(&cfg.knobs)
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	d, err := cfg.driver()
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", cfg.Path, err)
	}
	drv, err := store.NewDriver(d)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", cfg.Path, err)
	}
	db := &DB{cfg: cfg, drv: drv, writer: syncfilter.NewWriter(),
		reopening: make(chan struct{}, 1), scans: make(chan struct{}, 1)}
	db.mu.indexes = map[*Index]struct{}{}
	st, err := store.Open(ctx, cfg.Path, db.storeOptions(create))
	if err != nil {
		_ = db.writer.Close()
		return nil, err
	}
	// The app's pool must be on the file the library opened: keys are
	// confirmed on it. Checked before anything is written.
	if err := st.CheckApp(ctx); err != nil {
		st.Close()
		st.RemoveCreated()
		_ = db.writer.Close()
		return nil, fmt.Errorf("open database %s: %w", cfg.Path, err)
	}
	db.path = st.Path
	db.life.ctx, db.life.cancel = context.WithCancel(context.Background())
	f := &file{st: st, n: 1}
	f.refs.Store(1)
	db.cur.Store(f)
	db.follow.init(db)
	db.work = newWorker(db)
	return db, nil
}

func (db *DB) storeOptions(create bool) store.Options {
	return store.Options{Driver: db.drv, ReadOnly: db.cfg.ReadOnly, Create: create, Readers: db.cfg.Readers,
		BusyTimeout: db.cfg.BusyTimeout, Knobs: db.cfg.knobs.store, App: db.cfg.DB}
}

// Path returns the database file as resolved at open: the file SQLite
// opened, symbolic links followed.
func (db *DB) Path() string { return db.path.Real }

// Suspend stops the database's background work and lets go of its
// connections, for an app about to be suspended (iOS ends a suspended
// app that holds a lock on an SQLite file of a shared container). A
// rebuild, load or catch-up in progress is interrupted: the worker's is
// done again after Resume, the app's Rebuild returns ErrSuspended (and a
// Rebuild asked while suspended is refused with it). Suspend waits for
// them, for the calls that began before it and for the rest of the
// indexes' work (a Save, Reload or Wait in progress), until ctx ends.
// Once it returns nil, the library holds no SQLite transaction, lock or
// connection and starts nothing until Resume, but for the calls made
// meanwhile, which are still answered exactly: each opens the connection
// it needs and closes it before it returns (calls that keep coming do
// not keep Suspend waiting). Stop the app's own calls before it is
// suspended: a call in progress holds a read transaction.
func (db *DB) Suspend(ctx context.Context) error {
	db.mu.Lock()
	if db.mu.closing {
		db.mu.Unlock()
		return ErrClosed
	}
	db.mu.suspended = true
	for _, cancel := range db.mu.interrupt {
		cancel(errSuspended)
	}
	list := db.indexesLocked()
	db.mu.Unlock()
	if f := db.cur.Load(); f != nil {
		f.st.Quiesce(true)
	}
	var late []string // what did not stop before ctx ended
	if !db.work.pause(ctx) {
		late = append(late, "the worker's job")
	}
	if !db.follow.pause(ctx) {
		late = append(late, "the follower")
	}
	for _, ix := range list {
		if ix.life.Idle(ctx) != nil {
			name := ix.cfg.Table
			if name == "" {
				name = "the library's own table"
			}
			late = append(late, "the calls and work on "+name)
		}
	}
	if db.life.Idle(ctx) != nil { // Sources, and what remains of the worker's jobs
		late = append(late, "the database's calls")
	}
	if f := db.cur.Load(); f != nil {
		f.st.Quiesce(true) // what the work released while it stopped
	}
	if len(late) > 0 {
		return fmt.Errorf("suspend: %s did not stop in time: %w", strings.Join(late, ", "), context.Cause(ctx))
	}
	return nil
}

// Resume ends a Suspend: background work goes on where it was
// interrupted, and connections are kept in the pool again.
func (db *DB) Resume() {
	db.mu.Lock()
	if !db.mu.suspended {
		db.mu.Unlock()
		return
	}
	db.mu.suspended = false
	db.mu.Unlock()
	if f := db.cur.Load(); f != nil {
		f.st.Quiesce(false)
	}
	db.work.resume()
	db.follow.resume()
}

// suspendable returns ctx, which Suspend cancels with errSuspended, for a
// rebuild the app runs (Rebuild, the scan of an empty table at open),
// and the function to call once it is done; ErrSuspended while the
// database is suspended.
func (db *DB) suspendable(ctx context.Context) (context.Context, func(), error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.mu.suspended {
		return nil, nil, ErrSuspended
	}
	ctx, cancel := context.WithCancelCause(ctx)
	if db.mu.interrupt == nil {
		db.mu.interrupt = map[uint64]context.CancelCauseFunc{}
	}
	id := newID()
	db.mu.interrupt[id] = cancel
	return ctx, func() {
		db.mu.Lock()
		delete(db.mu.interrupt, id)
		db.mu.Unlock()
		cancel(nil)
	}, nil
}

// suspended reports whether the database is suspended.
func (db *DB) suspended() bool {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.mu.suspended
}

// indexesLocked lists the open indexes; callers hold mu.
func (db *DB) indexesLocked() []*Index {
	list := make([]*Index, 0, len(db.mu.indexes))
	for ix := range db.mu.indexes {
		list = append(list, ix)
	}
	return list
}

// Close closes every index taken from the database (see Index.Close),
// stops the background work and the filters' writer, and closes the
// database. ctx bounds the wait for work in progress: when it ends first,
// Close returns its error and the rest finishes without the caller as the
// last piece of work ends. Calls after Close return ErrClosed.
func (db *DB) Close(ctx context.Context) error {
	db.mu.Lock()
	if db.mu.closing {
		db.mu.Unlock()
		return nil
	}
	db.mu.closing = true
	list := db.indexesLocked()
	db.mu.suspended = false // the indexes' final saves run (Close cancels the background work)
	db.mu.Unlock()
	var errs []error
	for _, ix := range list {
		errs = append(errs, ix.close(ctx))
	}
	db.life.cancel()
	db.work.wake()
	db.follow.wake()
	errs = append(errs, db.life.Close(ctx, db.final))
	return joinClose(errs)
}

// joinClose joins the errors of closing, each once: several waits that
// ran out of one ctx report its error once.
func joinClose(errs []error) error {
	var out []error
	for _, err := range errs {
		if err == nil {
			continue
		}
		dup := false
		for _, o := range out {
			if o == err || o.Error() == err.Error() {
				dup = true
			}
		}
		if !dup {
			out = append(out, err)
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	return errors.Join(out...)
}

// final runs once the database's own work has ended. What the database
// holds (the filters' writer, the file) is released then, or, if an index
// has not finished closing (its Close stopped waiting, or was called from
// a callback of its rebuild), when the last such index has: its final
// saves the snapshot.
func (db *DB) final() {
	db.mu.Lock()
	db.mu.ended = true
	last := len(db.mu.indexes) == 0
	db.mu.Unlock()
	if last {
		db.release()
	}
}

func (db *DB) release() {
	_ = db.writer.Close()
	if f := db.cur.Swap(nil); f != nil {
		f.release()
	}
}

// forget removes an index that finished closing from the database's list.
func (db *DB) forget(ix *Index) {
	db.mu.Lock()
	delete(db.mu.indexes, ix)
	last := db.mu.ended && len(db.mu.indexes) == 0
	db.mu.Unlock()
	db.follow.forget(ix)
	if last {
		db.release()
	}
}

// calling counts an app's call (Fetched, Missing) in progress until the
// returned function runs.
func (db *DB) calling() func() {
	db.calls.Add(1)
	return func() { db.calls.Add(-1) }
}

// maxYield bounds how long a scan waits between two chunks for the app's
// calls to end.
const maxYield = 5 * time.Millisecond

// yieldToCalls waits, between two chunks of a rebuild's scan, while the
// app's calls are in progress, at most maxYield: on a machine of two
// cores the scan, its builder and its count otherwise take the cores the
// call needs (the first page after a migration, answered from SQLite
// while the rebuild runs, cost up to ten times the app's own IN-list).
func (db *DB) yieldToCalls(ctx context.Context) {
	if db.calls.Load() == 0 || db.cfg.knobs.noYield {
		return
	}
	deadline := time.Now().Add(maxYield)
	for db.calls.Load() > 0 && ctx.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
	}
}
