package rebuild

import (
	"context"
	"fmt"

	"github.com/syncfilter/syncfilter/rebuild/internal/gate"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/rebuild/internal/upkeep"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// DB is one database file opened once, through the app's SQLite driver,
// from which the index of each collection is taken. Its collections share
// one writing connection, a few reading ones, one worker goroutine for
// loads and rebuilds (one scan at a time), one follower that keeps
// filters current between calls, and one goroutine that applies the
// filters' bit changes. All its methods are safe for concurrent use.
type DB struct {
	cfg  DBConfig
	drv  *store.Driver
	path store.Path
	bg   *upkeep.DB
}

// OpenDB opens a database for the indexes of its collections. The path
// is resolved once; nothing is written; the journal mode stays the app's.
func OpenDB(ctx context.Context, cfg DBConfig) (*DB, error) {
	return openDB(ctx, cfg, false)
}

// openDB is OpenDB; create lets the library's own table start a new file.
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
	db := &DB{cfg: cfg}
	if db.drv, err = store.NewDriver(d); err != nil {
		return nil, fmt.Errorf("open database %s: %w", cfg.Path, err)
	}
	st, err := store.Open(ctx, cfg.Path, db.storeOptions(create))
	if err != nil {
		return nil, err
	}
	// The app's pool must be on the file the library opened: keys are
	// confirmed on it. Checked before anything is written.
	if err := st.CheckApp(ctx); err != nil {
		st.Close()
		st.RemoveCreated()
		return nil, fmt.Errorf("open database %s: %w", cfg.Path, err)
	}
	db.path = st.Path
	files := gate.NewFiles(st, func(ctx context.Context) (*store.DB, error) {
		st, err := store.Open(ctx, db.path.Abs, db.storeOptions(false))
		if err == nil && db.bg.Paused() {
			st.Quiesce(true)
		}
		return st, err
	})
	db.bg = upkeep.NewDB(files, syncfilter.NewWriter(), cfg.Logger, cfg.ReadOnly, cfg.knobs.upkeep())
	return db, nil
}

func (db *DB) storeOptions(create bool) store.Options {
	k := db.cfg.knobs.store
	k.PlainSQL = k.PlainSQL || forcePlainSQL
	return store.Options{Driver: db.drv, ReadOnly: db.cfg.ReadOnly, Create: create, Readers: db.cfg.Readers,
		BusyTimeout: db.cfg.BusyTimeout, Knobs: k, App: db.cfg.DB, Params: db.cfg.ConnParams}
}

// forcePlainSQL makes every database take the statements' plain dialect
// whatever its SQLite (the tests under SYNCFILTER_TEST_PLAIN: make test
// runs them so on mattn's SQLite; helpers_test.go sets it).
var forcePlainSQL bool

// Suspend stops the background work, waits (until ctx ends) for the work
// begun before it and lets go of every connection; calls are still
// answered exactly. Rebuild and Save return ErrSuspended until Resume.
func (db *DB) Suspend(ctx context.Context) error { return db.bg.Suspend(ctx) }

// Resume ends a Suspend: the background work goes on where it stopped.
func (db *DB) Resume() { db.bg.Resume() }

// Close closes every index taken from the database, then the database.
// ctx bounds the wait for work in progress; when it ends first, Close
// returns its error and the rest finishes as the last work ends.
func (db *DB) Close(ctx context.Context) error { return db.bg.Close(ctx) }

// DBStats describes the database as a whole.
type DBStats struct {
	Indexes      int    // indexes open
	ReadersInUse int    // reading connections in use
	ReadersIdle  int    // ... and idle
	Upkeep       string // "running" while the background runs a job, else ""
	Suspended    bool
}

// Stats returns the database's statistics.
func (db *DB) Stats() DBStats {
	st := db.bg.Stats()
	return DBStats{Indexes: st.Indexes, ReadersInUse: st.InUse, ReadersIdle: st.Idle, Upkeep: st.Job, Suspended: st.Suspended}
}
