package upkeep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/gate"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/rebuild/internal/work"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// Knobs are what tests and the ablation benchmark switch (zero: production).
type Knobs struct {
	NoFollow         bool                // no catch-up between calls
	NoDeferredLoad   bool                // the opening load starts at once, not after the first call
	NoDeferredRepair bool                // a repair, and an open's first attach and scan, start at once, not after the next call
	ScanRow          func(n int64) error // a scan's start (0) and each chunk it read: an error fails it as SQLite would
	BeforeCount      func() error        // before a rebuild's count; an error is the count's
	Published        func()              // a rebuild published its filter, before the database records the scan
	FollowPoll       func()              // the follower looks at its state
	FollowMin        time.Duration       // the follower's shortest window after a call (followMin)
	AppQueued        func()              // an app's call queued its job
	Now              func() time.Time    // the clock of snapshot headers and automatic rebuilds (nil: time.Now)
	RetryFirst       time.Duration       // the first wait before a failed background rebuild is tried again
}

func (k Knobs) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

// DB is the background side of one database: the worker that runs the
// indexes' jobs one at a time, the follower that keeps their filters
// current between calls, and the filters' writer goroutine.
type DB struct {
	Files    *gate.Files
	Writer   *syncfilter.Writer
	Log      *slog.Logger
	ReadOnly bool
	Knobs    Knobs

	life   work.Life // the worker's and the follower's goroutines, for Close
	ctx    context.Context
	cancel context.CancelFunc

	mu struct {
		sync.Mutex // guards the fields below, and every Keeper's k.mu fields
		queue      []*job
		running    bool                    // the worker runs
		current    context.CancelCauseFunc // interrupts the job in progress
		paused     bool                    // Suspend
		stopped    chan struct{}           // closed when the worker ends while paused
		follow     follow
		keepers    map[*Keeper]struct{}
		closing    bool // Close began: no new index
		ended      bool // the database's own work ended: the last index to finish closing releases what it holds
	}
	kick chan struct{} // capacity 1: the follower looks at its state now (Suspend, Close)
}

// NewDB starts the background of a database (nothing runs until asked).
func NewDB(files *gate.Files, writer *syncfilter.Writer, log *slog.Logger, readOnly bool, knobs Knobs) *DB {
	db := &DB{Files: files, Writer: writer, Log: log, ReadOnly: readOnly, Knobs: knobs, kick: make(chan struct{}, 1)}
	db.ctx, db.cancel = context.WithCancel(context.Background())
	db.mu.follow.calls = map[*Keeper]time.Time{}
	db.mu.keepers = map[*Keeper]struct{}{}
	return db
}

// Suspend stops the background work and waits for it, for the work of
// the indexes that began before it, until ctx ends; once it returns nil
// the library holds no connection (but for the calls made meanwhile,
// each of which closes what it opened) and starts nothing until Resume.
func (db *DB) Suspend(ctx context.Context) error {
	db.mu.Lock()
	if db.mu.closing {
		db.mu.Unlock()
		return store.ErrClosed
	}
	db.mu.paused = true
	// The app's jobs not started yet are refused as if asked now; a
	// rebuild that no filter waits for goes to the background.
	var again, replaced []*job
	for _, j := range slices.Clone(db.mu.queue) {
		if j.app != nil {
			db.remove(j)
			db.done(j, result{err: fmt.Errorf("%s: %w", kindNames[j.kind], store.ErrSuspended)})
			if j.kind == kindRebuild && j.k.G.Serving() == nil {
				again = append(again, j)
			}
			replaced = append(replaced, j)
		}
	}
	var stopped []chan struct{}
	if db.mu.running {
		if db.mu.current != nil {
			db.mu.current(errSuspended)
		}
		if db.mu.stopped == nil { // a Suspend already waiting shares it
			db.mu.stopped = make(chan struct{})
		}
		stopped = append(stopped, db.mu.stopped)
	}
	if f := &db.mu.follow; f.running {
		if f.stopped == nil {
			f.stopped = make(chan struct{})
		}
		stopped = append(stopped, f.stopped)
		f.cancel()
	}
	keepers := db.keepersLocked()
	db.mu.Unlock()
	for _, j := range again {
		db.ask(kindRebuild, j.k, reason{text: "asked by the app, interrupted by Suspend"})
	}
	for _, j := range replaced {
		db.reask(j)
	}
	db.quiesce(true)
	db.wake()
	var late []string
	for _, ch := range stopped {
		select {
		case <-ch:
		case <-ctx.Done():
			late = append(late, "the background work")
		}
	}
	for _, k := range keepers {
		if k.life.Idle(ctx) != nil {
			late = append(late, "the calls on "+k.G.Name())
		}
	}
	if db.life.Idle(ctx) != nil {
		late = append(late, "the database's calls")
	}
	db.mu.Lock()
	paused := db.mu.paused
	db.mu.Unlock()
	if paused { // not if Resume came meanwhile
		db.quiesce(true) // what the work released while it stopped
	}
	if len(late) > 0 {
		return fmt.Errorf("suspend: %s did not stop in time: %w", strings.Join(late, ", "), context.Cause(ctx))
	}
	return nil
}

// quiesce makes the current file keep no connection open while none is
// in use (on), or pool them again.
func (db *DB) quiesce(on bool) {
	if f := db.Files.Current(); f != nil {
		f.St.Quiesce(on)
	}
}

// Resume ends a Suspend: the background goes on where it was interrupted.
func (db *DB) Resume() {
	db.mu.Lock()
	was := db.mu.paused
	db.mu.paused = false
	db.mu.Unlock()
	if was {
		db.quiesce(false)
		db.start()
	}
}

// Paused reports whether the database is suspended.
func (db *DB) Paused() bool {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.mu.paused
}

// Enter registers a call on the database itself (Sources), which
// Suspend and Close wait for.
func (db *DB) Enter() (leave func(), ok bool) {
	t, ok := db.life.Enter()
	return func() { db.life.Leave(t) }, ok
}

func (db *DB) keepersLocked() []*Keeper {
	out := make([]*Keeper, 0, len(db.mu.keepers))
	for k := range db.mu.keepers {
		out = append(out, k)
	}
	return out
}

// Close closes every index (see Keeper.Close), stops the background and
// the filters' writer, and lets go of the file; ctx bounds the waits, and
// what remains finishes without the caller.
func (db *DB) Close(ctx context.Context) error {
	db.mu.Lock()
	if db.mu.closing {
		db.mu.Unlock()
		return nil
	}
	db.mu.closing = true
	db.mu.paused = false // the indexes' final saves run
	keepers := db.keepersLocked()
	db.mu.Unlock()
	var errs []error
	for _, k := range keepers {
		errs = append(errs, k.Close(ctx))
	}
	db.cancel()
	db.start() // the worker fails its queue and ends
	db.wake()
	errs = append(errs, db.life.Close(ctx, func() {
		db.mu.Lock()
		db.mu.ended = true
		last := len(db.mu.keepers) == 0
		db.mu.Unlock()
		if last {
			db.release()
		}
	}))
	return joinOnce(errs)
}

func (db *DB) release() {
	_ = db.Writer.Close()
	db.Files.Close()
}

// Closing reports whether Close began.
func (db *DB) Closing() bool {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.mu.closing
}

// joinOnce joins errors, each once: several waits that ran out of one ctx
// report its error once.
func joinOnce(errs []error) error {
	var out []error
	for _, err := range errs {
		if err != nil && !slices.ContainsFunc(out, func(o error) bool { return o.Error() == err.Error() }) {
			out = append(out, err)
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	return errors.Join(out...)
}

// errSuspended is the cause of a job's context that Suspend cancelled.
var errSuspended = errors.New("suspended")

// interrupted reports whether ctx was cancelled by Suspend.
func interrupted(ctx context.Context) bool { return errors.Is(context.Cause(ctx), errSuspended) }

// Stats describes the database's background.
type Stats struct {
	Indexes, InUse, Idle int
	Job                  string
	Suspended            bool
}

// Stats returns the database's background statistics.
func (db *DB) Stats() Stats {
	db.mu.Lock()
	st := Stats{Indexes: len(db.mu.keepers), Suspended: db.mu.paused}
	if db.mu.running && db.mu.current != nil {
		st.Job = "running"
	}
	db.mu.Unlock()
	if f := db.Files.Current(); f != nil {
		st.InUse, st.Idle = f.St.Readers()
	}
	return st
}

// What package rebuild/ops needs of package rebuild, which sets them:
// the background of a *rebuild.DB or *rebuild.Index (Unwrap; a nil
// keeper for a DB), and a database (a rebuild.DBConfig) and a keeper (a
// rebuild.Source) opened without an index's opening load or scan.
var (
	Unwrap     func(x any) (*DB, *Keeper)
	OpenDB     func(ctx context.Context, cfg any) (*DB, error)
	OpenKeeper func(db *DB, src any) (*Keeper, error)
)

// Detach opens the database (cfg, a rebuild.DBConfig) and removes the
// source from it (store.DB.Detach), checking the names first.
func Detach(ctx context.Context, cfg any, table, column string, force bool) error {
	if (table == "") != (column == "") {
		return fmt.Errorf("detach: table %q and column %q: give both or neither: %w", table, column, store.ErrBadConfig)
	}
	if table != "" {
		if err := store.CheckName("table", table); err != nil {
			return fmt.Errorf("detach: %w", err)
		}
		if err := store.CheckName("column", column); err != nil {
			return fmt.Errorf("detach: %w", err)
		}
	}
	db, err := OpenDB(ctx, cfg)
	if err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	defer db.Close(ctx)
	f, err := db.Files.Get(ctx)
	if err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	defer f.Release()
	return f.St.Detach(ctx, table, column, force)
}

// Sources lists the sources the database records (store.List).
func (db *DB) Sources(ctx context.Context) ([]store.Listed, error) {
	leave, ok := db.Enter()
	if !ok {
		return nil, store.ErrClosed
	}
	defer leave()
	f, err := db.Files.Get(ctx)
	if err != nil {
		return nil, err
	}
	defer f.Release()
	c, err := f.St.Reader(ctx)
	if err != nil {
		return nil, err
	}
	defer f.St.Release(c)
	l, err := store.List(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("list sources: %w", err)
	}
	return l, nil
}
