package rebuild

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// DB is one database file opened once, from which the index of each
// collection is taken (Index). Everything the collections of a database
// need is shared: one writing connection, a few reading ones
// (DBConfig.Readers), one freshness check, one goroutine that applies the
// filters' bit changes and one background worker for rebuilds, so that
// ten collections cost what one does, and rebuilds of different
// collections never run at the same time (peak memory is the largest
// rebuild's, not the sum).
//
// A DB owns the goroutines it starts: the filters' writer and, unless
// read-only, the worker. Close stops them. Its connections: one writer
// (none when read-only), DBConfig.Readers readers, and one more, opened
// only for sources without a log, that reads PRAGMA data_version.
//
// Locks, each with one job (the indexes' own are in the Index doc; none is
// held while taking another, nor across SQL or a wait):
//
//	mu            guards indexes, closing and ended
//
// and two turns, channels a waiting call gives up when its ctx ends (or,
// for the rebuild turn, when its index closes), held across SQL by design:
//
//	turn          one reopen of a replaced file at a time, held across
//	              the opening of the new file
//	rebuilds      one rebuild at a time in the database, held for the
//	              rebuild's duration (its scan, its Progress calls)
type DB struct {
	cfg    DBConfig
	drv    *store.Driver   // the app's SQLite driver
	ctx    context.Context // of background work; cancelled by Close
	cancel context.CancelFunc
	writer *syncfilter.Writer   // applies the bit changes of every filter
	turn   chan struct{}        // one reopen at a time (fresh.go)
	path   store.Path           // resolved at open
	cur    atomic.Pointer[file] // the file at the path; replaced when the app replaces it, nil once closed
	work   *worker              // nil when read-only

	rebuilds chan struct{} // capacity 1: held by the rebuild running
	token    [16]byte      // this DB's holds on its sources (syncfilter_holders)
	holder   string        // who holds them, for Detach's message

	act     activity   // the worker's loop, for Close
	mu      sync.Mutex // guards indexes, closing and ended
	indexes map[*Index]struct{}
	closing bool
	ended   bool // the DB's own work ended: the last index to finish closing releases what the DB holds
}

// file is the database file the DB has open, shared by the calls that use
// it: the store closes when the DB let go of it (the app replaced the file,
// or Close) and the last call using it ended.
type file struct {
	st   *store.DB
	refs atomic.Int64 // 1 while it is the DB's current file, +1 per call using it
	n    uint64       // 1 for the file opened first, +1 per file opened since
}

// explain marks err ErrReplaced if the file is no longer the one at the
// path: a read of a file the app replaced meanwhile fails with whatever it
// met (the new file's journal beside the name: "attempt to write a
// readonly database").
func (f *file) explain(err error) error {
	if err == nil || errors.Is(err, ErrReplaced) {
		return err
	}
	if serr := f.st.SameFile(); errors.Is(serr, ErrReplaced) {
		return fmt.Errorf("%w (%w)", serr, err)
	}
	return err
}

// acquire takes a reference; false if the file closed already.
func (f *file) acquire() bool {
	for {
		n := f.refs.Load()
		if n <= 0 {
			return false
		}
		if f.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference; the last one closes the store.
func (f *file) release() {
	if f.refs.Add(-1) == 0 {
		f.st.Close()
	}
}

// OpenDB opens a database for the indexes of its collections. The path is
// resolved once (see DBConfig.Path); a file with more than one name is
// refused (ErrHardLinked). The journal mode is the app's: nothing here
// changes it, and every mode works (WAL is recommended: readers then run
// beside writers).
func OpenDB(ctx context.Context, cfg DBConfig) (*DB, error) {
	return openDB(ctx, cfg, false)
}

// openDB is OpenDB; create lets the library's own table start a new
// database file.
func openDB(ctx context.Context, cfg DBConfig, create bool) (*DB, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	drv, err := store.NewDriver(cfg.Driver)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", cfg.Path, err)
	}
	st, err := store.Open(ctx, cfg.Path, store.Options{Driver: drv, ReadOnly: cfg.ReadOnly, Create: create, Readers: cfg.Readers, BusyTimeout: cfg.BusyTimeout, Knobs: cfg.knobs})
	if err != nil {
		return nil, err
	}
	db := &DB{cfg: cfg, drv: drv, path: st.Path, writer: syncfilter.NewWriter(), turn: make(chan struct{}, 1), rebuilds: make(chan struct{}, 1), indexes: map[*Index]struct{}{}}
	db.ctx, db.cancel = context.WithCancel(context.Background())
	f := &file{st: st, n: 1}
	f.refs.Store(1)
	db.cur.Store(f)
	_, _ = rand.Read(db.token[:])
	host, _ := os.Hostname()
	db.holder = fmt.Sprintf("process %d (%s) on %s", os.Getpid(), filepath.Base(os.Args[0]), host)
	if !cfg.ReadOnly {
		db.work = newWorker()
		db.act.enter()
		go db.work.run(db)
	}
	return db, nil
}

// Path returns the database file as resolved at open: the file SQLite
// opened, symbolic links followed.
func (db *DB) Path() string { return db.path.Real }

// Close closes every index taken from the database (see Index.Close),
// stops the background worker and the filters' writer, and closes the
// database. ctx bounds the wait for work in progress: when it ends first,
// Close returns its error and the rest finishes without the caller as the
// last piece of work ends. Calls after Close return ErrClosed.
func (db *DB) Close(ctx context.Context) error {
	db.mu.Lock()
	if db.closing {
		db.mu.Unlock()
		return nil
	}
	db.closing = true
	var list []*Index
	for ix := range db.indexes {
		list = append(list, ix)
	}
	db.mu.Unlock()
	var errs []error
	for _, ix := range list {
		errs = append(errs, ix.close(ctx))
	}
	db.cancel()
	if db.work != nil {
		db.work.wake()
	}
	errs = append(errs, db.act.close(ctx, db.final))
	return errors.Join(errs...)
}

// final runs once the database's own work has ended. What the database
// holds (the filters' writer, the file) is released then, or, if an index
// has not finished closing (its Close stopped waiting, or was called from
// a callback of its rebuild), when the last such index has: its final
// saves the snapshot and removes its hold with them.
func (db *DB) final() {
	db.mu.Lock()
	db.ended = true
	last := len(db.indexes) == 0
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
	delete(db.indexes, ix)
	last := db.ended && len(db.indexes) == 0
	db.mu.Unlock()
	if last {
		db.release()
	}
}
