package rebuild

import (
	"context"
	"errors"
	"fmt"
	"os"
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
		for name, err := range map[string]error{"Fetched": ferr, "Missing": merr, "Rebuild": ix.Rebuild(ctx), "Reload": ix.Reload(ctx), "Save": ix.Save(ctx)} {
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
			gen := ix.Stats().Generation // the filter covers more than the snapshot: Close saves
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

// TestQueriesFromProgress: Fetched, Missing and Stats called from inside
// Source.Progress (during the app's Rebuild and during the worker's)
// return and answer exactly, with a single reading connection
// (DBConfig.Readers 1): the scan running the callback holds no connection
// the queries need.
func TestQueriesFromProgress(t *testing.T) {
	ctx := context.Background()
	rows := ids("seed", 12000)
	path := appDB(t, rows...)
	cfg := appConfig(path)
	cfg.Readers = 1
	cfg.ProgressEvery = 1000
	mon := newMonitor(t, callBound)
	var h atomic.Pointer[Index]
	var asked atomic.Int64
	probe := append(rows[:20:20], ids("never", 20)...)
	cfg.Progress = func(done, total int64) {
		ix := h.Load()
		if ix == nil {
			return
		}
		asked.Add(1)
		missing, err := missingList(ctx, ix, probe)
		if err != nil || fmt.Sprint(missing) != fmt.Sprint(probe[20:]) {
			t.Errorf("Missing inside Progress = %v, %v", missing, err)
		}
		if ok, err := ix.Fetched(ctx, rows[done%int64(len(rows))]); err != nil || !ok {
			t.Errorf("Fetched inside Progress = %v, %v", ok, err)
		}
		_ = ix.Stats()
	}
	var ix *Index
	mon.do("Open with one reader", func() { ix = open(t, cfg) })
	h.Store(ix)
	mon.do("Rebuild whose Progress asks the index", func() {
		if err := ix.Rebuild(ctx); err != nil {
			t.Fatal(err)
		}
	})
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The worker's rebuild: no snapshot to load.
	if err := os.Remove(cfg.Snapshot); err != nil {
		t.Fatal(err)
	}
	h.Store(nil)
	mon.do("Open with one reader", func() { ix = open(t, cfg) })
	h.Store(ix)
	mon.do("Wait for the worker's rebuild whose Progress asks the index", func() {
		if err := ix.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	})
	if asked.Load() == 0 {
		t.Fatal("Progress never asked the index: the test proves nothing")
	}
}
