package rebuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/snapshot"
)

// closedEverywhere checks that every call of a closed index returns
// ErrClosed, at once.
func closedEverywhere(t testing.TB, mon *monitor, ix *Index) {
	t.Helper()
	ctx := context.Background()
	mon.do("calls after Close", func() {
		_, ferr := ix.Fetched(ctx, "a")
		_, merr := missingList(ctx, ix, []string{"a"})
		for name, err := range map[string]error{"Fetched": ferr, "Missing": merr, "Rebuild": ix.Rebuild(ctx), "Reload": ix.k.Reload(ctx), "Save": ix.Save(ctx)} {
			if !errors.Is(err, ErrClosed) {
				t.Errorf("%s after Close = %v, want ErrClosed", name, err)
			}
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := ix.Wait(wctx); errors.Is(err, context.DeadlineExceeded) {
			t.Error("Wait after Close does not return")
		}
	})
}

// progressCloser is a Source.Progress that calls Close (of the index, or
// of its database) the first time it runs once armed, and records what
// happened; later calls are counted.
type progressCloser struct {
	armed   atomic.Bool
	closeFn func(context.Context) error
	outside bool          // Close is called by another goroutine while the callback blocks
	closed  chan error    // Close's result, once
	done    atomic.Bool   // that Close returned
	after   atomic.Int64  // Progress calls after that Close returned
	hold    chan struct{} // the callback blocks on it after Close returns
	inside  chan struct{} // closed when the callback first runs armed
	gate    chan struct{} // the callback waits for it before it calls Close
	once    sync.Once
}

func newProgressCloser() *progressCloser {
	return &progressCloser{closed: make(chan error, 1), inside: make(chan struct{}), gate: make(chan struct{}), hold: make(chan struct{})}
}

func (p *progressCloser) progress(done, total int64) {
	if !p.armed.Load() {
		return
	}
	first := false
	p.once.Do(func() { first = true })
	if !first {
		if p.done.Load() {
			p.after.Add(1)
		}
		return
	}
	close(p.inside)
	<-p.gate
	if !p.outside {
		err := p.closeFn(context.Background())
		p.done.Store(true)
		p.closed <- err
	}
	<-p.hold
}

// TestCloseFromProgress: Close called inside Source.Progress — during the
// app's Rebuild, during a rebuild the database's worker runs, of the
// index or of its whole database — returns without waiting for the
// rebuild running the callback, also while another call waits for that
// rebuild's turn; the rebuild then stops, every later call returns
// ErrClosed, nothing holds a lock on the file or the source (Detach
// works), and no goroutine outlives the callback.
func TestCloseFromProgress(t *testing.T) {
	// Not parallel: counts the process's goroutines.
	rows := ids("seed", 12000)
	for _, tc := range []struct {
		name       string
		db         bool // OpenDB + DB.Index, else rebuild.Open
		closeDB    bool // the callback closes the database, else the index
		background bool // the worker's rebuild, else the app's Rebuild
		waiter     bool // another Rebuild of the same index waits for the turn meanwhile
		other      bool // another index of the database has a Rebuild waiting for the turn
		outside    bool // Close is called by another goroutine while the callback blocks
	}{
		{name: "app rebuild, Open"},
		{name: "app rebuild, Open, another Rebuild waiting", waiter: true},
		{name: "app rebuild, DB.Index", db: true},
		{name: "app rebuild, DB.Close, another collection's Rebuild waiting", db: true, closeDB: true, other: true},
		{name: "worker rebuild, Open", background: true},
		{name: "worker rebuild, DB.Index, DB.Close", db: true, closeDB: true, background: true},
		{name: "outside, app rebuild, Open", outside: true},
		{name: "outside, app rebuild, DB.Close", db: true, closeDB: true, outside: true},
		{name: "outside, worker rebuild, Open", background: true, outside: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := modeDB(t, "delete", []string{"records"}, rows...)
			others := modeConn(t, path, "delete")
			mustExec(t, others, `CREATE TABLE others (id TEXT PRIMARY KEY, body TEXT)`)
			insertInto(t, others, "others", ids("other", 100)...)
			_ = others.Close()
			snap := path + ".sfb"
			// The first attach and scan, outside the count: the app
			// cannot reach that scan's callback (it has no handle yet).
			warm := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: snap}})
			if err := warm.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.background {
				// No snapshot: the next open serves from SQLite and asks
				// the worker for a rebuild.
				if err := os.Remove(snap); err != nil {
					t.Fatal(err)
				}
			}
			baseline := baselineGoroutines()
			mon := newMonitor(t, callBound)

			pc := newProgressCloser()
			src := Source{Table: "records", Column: "id", Snapshot: snap, ProgressEvery: 1000, Progress: pc.progress}
			var ix, other *Index
			var db *DB
			var err error
			if tc.db {
				if db, err = OpenDB(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}); err != nil {
					t.Fatal(err)
				}
				if ix, err = db.Index(ctx, src); err != nil {
					t.Fatal(err)
				}
				if tc.other {
					if other, err = db.Index(ctx, Source{Table: "others", Column: "id"}); err != nil {
						t.Fatal(err)
					}
				}
			} else {
				cfg := config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: src.Table, Column: src.Column, Snapshot: snap, ProgressEvery: src.ProgressEvery, Progress: src.Progress}}
				if ix, err = Open(ctx, cfg.DBConfig, cfg.Source); err != nil {
					t.Fatal(err)
				}
			}
			pc.outside = tc.outside
			pc.closeFn = func(ctx context.Context) error {
				if tc.closeDB {
					return db.Close(ctx)
				}
				return ix.Close(ctx)
			}
			pc.armed.Store(true)

			var wg sync.WaitGroup
			results := make(chan error, 3)
			if !tc.background {
				wg.Add(1)
				go func() {
					defer wg.Done()
					mon.do("the app's Rebuild running the callback", func() { results <- ix.Rebuild(ctx) })
				}()
			}
			select { // the callback runs
			case <-pc.inside:
			case <-time.After(callBound):
				t.Fatal("Progress never called")
			}
			for _, w := range []struct {
				on  *Index
				yes bool
			}{{ix, tc.waiter}, {other, tc.other}} {
				if !w.yes {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Waits for the turn the callback's rebuild holds
					// while it scans (the callback does not hold it up);
					// it must not keep Close waiting forever.
					mon.do("a Rebuild waiting for the turn", func() {
						if err := w.on.Rebuild(ctx); err != nil && !errors.Is(err, ErrClosed) {
							results <- fmt.Errorf("waiting Rebuild = %v, want nil or ErrClosed", err)
						}
					})
				}()
			}
			if tc.waiter || tc.other {
				time.Sleep(200 * time.Millisecond) // let the Rebuild reach its wait for the turn
			}
			close(pc.gate)
			if tc.outside {
				// Close bounded by a short context while the callback
				// blocks: it returns (nil: it does not wait for work
				// parked in a callback; or its context's error).
				cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				mon.do("Close while Progress blocks", func() {
					if err := pc.closeFn(cctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("Close while Progress blocks = %v", err)
					}
					pc.done.Store(true)
				})
				cancel()
			} else {
				var closeErr error
				mon.do("Close inside Progress", func() { closeErr = <-pc.closed })
				if closeErr != nil {
					t.Fatalf("Close inside Progress = %v", closeErr)
				}
			}
			// The callback has not returned yet: the index is closed for
			// every call, and the file is not locked.
			closedEverywhere(t, mon, ix)
			unlocked(t, path, "others")
			close(pc.hold)
			wg.Wait()
			close(results)
			for err := range results {
				if err != nil && !errors.Is(err, ErrClosed) {
					t.Errorf("the rebuild running the callback, or a waiting one: %v (want nil or ErrClosed)", err)
				}
			}
			if !tc.closeDB && db != nil {
				if err := db.Close(ctx); err != nil {
					t.Fatal(err)
				}
			}
			mon.close()
			goroutinesBackTo(t, baseline)
			if n := pc.after.Load(); n > 0 {
				t.Errorf("Progress called %d times after Close returned: the rebuild went on", n)
			}
			unlocked(t, path, "records")
			if err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "id"); err != nil {
				t.Fatalf("Detach after Close: %v", err)
			}
		})
	}
}

// TestCloseIsBoundedByItsContext: while another connection holds the
// database's write lock, Close (which saves the snapshot and records it,
// a write) returns when its context ends, with the context's error,
// however long SQLite would wait for the lock; once the lock is released,
// the rest finishes without the caller: the snapshot is saved and no
// goroutine remains.
func TestCloseIsBoundedByItsContext(t *testing.T) {
	// Not parallel: counts the process's goroutines.
	for _, mode := range []string{"wal", "delete"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			path := modeDB(t, mode, []string{"records"}, ids("seed", 2000)...)
			app := modeConn(t, path, mode)
			app.SetMaxOpenConns(1)
			baseline := baselineGoroutines()
			mon := newMonitor(t, callBound)
			// SQLite would wait ten minutes for the lock.
			cfg := config{DBConfig: DBConfig{Path: path, BusyTimeout: 10 * time.Minute, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb"}}
			ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
			if err != nil {
				t.Fatal(err)
			}
			if err := ix.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			insertInto(t, app, "records", ids("later", 100)...)
			if ok, err := ix.Fetched(ctx, "later-0000099"); err != nil || !ok {
				t.Fatalf("Fetched = %v, %v", ok, err)
			}
			if err := ix.Wait(ctx); err != nil { // caught up
				t.Fatal(err)
			}
			gen := stats(ix).Generation // the filter covers more than the snapshot: Close saves
			tx, err := app.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(`INSERT INTO records (id) VALUES ('locking')`); err != nil {
				t.Fatal(err)
			}
			cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			mon.do("Close while another connection holds the write lock", func() {
				if err := ix.Close(cctx); !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Close = %v, want the context's error", err)
				}
			})
			closedEverywhere(t, mon, ix)
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			mon.close()
			goroutinesBackTo(t, baseline)
			claim, err := snapshot.ReadClaim(cfg.Snapshot)
			if err != nil {
				t.Fatal(err)
			}
			if claim.Generation < gen {
				t.Errorf("snapshot at generation %d, the filter covered %d when Close was called", claim.Generation, gen)
			}
			if err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "id"); err != nil {
				t.Fatalf("Detach after Close: %v", err)
			}
		})
	}
}

// TestCloseErrorNamesEachCauseOnce: Close with a context of a
// millisecond while a rebuild scans (held in its scan) returns the
// context's error, whose text says "context deadline exceeded" once,
// however many waits ran out of that context: the index's, the
// database's, several collections'. The rebuild then stops, and the
// closing finishes without the caller.
func TestCloseErrorNamesEachCauseOnce(t *testing.T) {
	// Not parallel: counts the process's goroutines.
	for _, tc := range []struct {
		name    string
		db      bool // OpenDB with two collections, DB.Close; else rebuild.Open, Index.Close
		worker  bool // the worker's first scan; else the app's Rebuild
		closeIx bool // Index.Close of one collection of the DB
	}{
		{name: "Open, the app's Rebuild"},
		{name: "Open, the worker's first scan", worker: true},
		{name: "DB.Close, the app's Rebuild", db: true},
		{name: "DB.Close, the worker's first scan", db: true, worker: true},
		{name: "DB.Index Close, the app's Rebuild", db: true, closeIx: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := modeDB(t, "wal", []string{"records", "others"}, ids("seed", 500)...)
			if !tc.worker {
				for _, table := range []string{"records", "others"} { // attached and scanned before
					ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: table, Column: "id", Snapshot: path + "." + table + ".sfb"}})
					if err := ix.Close(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			baseline := baselineGoroutines()
			hk := &hooks{}
			dcfg := DBConfig{Path: path, Driver: testdriver.Driver(), knobs: hk.knobsOf(knobs{})}
			entered, release := scanGate(t, hk)
			src := func(table string) Source {
				return Source{Table: table, Column: "id", Snapshot: path + "." + table + ".sfb"}
			}
			var ix *Index
			var db *DB
			var err error
			if tc.db {
				if db, err = OpenDB(ctx, dcfg); err != nil {
					t.Fatal(err)
				}
				if ix, err = db.Index(ctx, src("records")); err != nil {
					t.Fatal(err)
				}
				if _, err = db.Index(ctx, src("others")); err != nil {
					t.Fatal(err)
				}
			} else if ix, err = Open(ctx, dcfg, src("records")); err != nil {
				t.Fatal(err)
			}
			if tc.worker {
				firstCall(t, ix) // the first scan starts after a call
			}
			rebuilt := make(chan error, 1)
			if !tc.worker {
				go func() { rebuilt <- ix.Rebuild(ctx) }()
			}
			waitClosed(t, entered, "the scan")
			cctx, cancel := context.WithTimeout(ctx, time.Millisecond)
			defer cancel()
			switch {
			case tc.closeIx:
				causesOnce(t, "Index.Close", ix.Close(cctx))
			case tc.db:
				causesOnce(t, "DB.Close", db.Close(cctx))
			default:
				causesOnce(t, "Close", ix.Close(cctx))
			}
			release()
			if !tc.worker {
				if err := <-rebuilt; err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, context.Canceled) {
					t.Fatalf("the Rebuild that Close stopped = %v", err)
				}
			}
			if tc.closeIx {
				if err := db.Close(ctx); err != nil {
					t.Fatal(err)
				}
			}
			goroutinesBackTo(t, baseline)
		})
	}
}

// TestNoGoroutineOutlivesClose opens and closes the index many times with
// queries in flight (and background rebuilds started by dropped filters):
// afterwards no goroutine is left.
func TestNoGoroutineOutlivesClose(t *testing.T) {
	// Not parallel: counts the process's goroutines.
	ctx := context.Background()
	path := appDB(t, ids("seed", 2000)...)
	cfg := appConfig(path)
	warm := open(t, cfg) // first attach and snapshot, outside the count
	if err := warm.Close(ctx); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	baseline := runtime.NumGoroutine()
	probe := append(ids("seed", 100), ids("never", 100)...)
	for cycle := range 30 {
		ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for q := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					var err error
					if q%2 == 0 {
						_, err = missingList(ctx, ix, probe)
					} else {
						_, err = ix.Fetched(ctx, probe[q])
					}
					if errors.Is(err, ErrClosed) {
						return
					}
					if err != nil {
						t.Errorf("query: %v", err)
						return
					}
				}
			}()
		}
		if cycle%3 == 0 {
			go func() { _ = ix.Rebuild(ctx) }() // a rebuild in flight too
		}
		time.Sleep(2 * time.Millisecond)
		if err := ix.Close(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCloseLeavesAGoneDatabaseAlone: the host removes a database the
// index has open (a test suite deleting its temporary folder, an app's
// "clear data"), or moves it, while the filter covers more than its
// snapshot, or puts another database file at its name: Close creates no
// file beside the name, not even for a moment (a temporary file there makes the host's folder removal fail).
func TestCloseLeavesAGoneDatabaseAlone(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"removed", "moved", "replaced"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "app.db")
			db := rawDB(t, path)
			mustExec(t, db, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`)
			insertIDs(t, db, ids("seed", 300)...)
			ix := open(t, appConfig(path))
			if err := ix.Save(ctx); err != nil {
				t.Fatal(err)
			}
			insertIDs(t, db, ids("later", 50)...) // the filter now covers more than the file
			if _, err := ix.Missing(ctx, ids("later", 5)); err != nil {
				t.Fatal(err)
			}
			_ = db.Close()
			switch how {
			case "removed":
				for _, name := range dirEntries(t, dir) {
					if err := os.Remove(filepath.Join(dir, name)); err != nil {
						t.Fatal(err)
					}
				}
			case "moved":
				if err := os.Rename(path, filepath.Join(t.TempDir(), "moved.db")); err != nil {
					t.Fatal(err)
				}
			case "replaced": // another database file now has the name
				if err := os.Rename(path, filepath.Join(t.TempDir(), "moved.db")); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if created := createdDuring(t, dir, func() { _ = ix.Close(ctx) }); len(created) > 0 {
				t.Fatalf("Close beside a %s database created %q", how, created)
			}
		})
	}
}

// TestCloseReturnsTheSaveError: a save on Close that fails (the snapshot's
// folder is gone) is Close's error, not only a log line.
func TestCloseReturnsTheSaveError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 300)...)
	cfg := appConfig(path)
	snapDir := t.TempDir()
	cfg.Snapshot = filepath.Join(snapDir, "records.sfb")
	ix := open(t, cfg)
	if err := ix.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	insertIDs(t, db, ids("later", 20)...) // the filter now covers more than the file
	_ = db.Close()
	if _, err := ix.Missing(ctx, ids("later", 3)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(snapDir); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(ctx); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Close = %v, want the save's error (the folder is gone)", err)
	}
}
