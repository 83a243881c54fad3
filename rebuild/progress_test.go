package rebuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// progressBound is how long one public method called from a Progress
// callback may take before the test calls it a hang: far beyond what any
// of them needs on these tables, even on a loaded machine.
const progressBound = 60 * time.Second

// TestProgressMayCallEverything: a Progress callback calls every public
// method of its own index, of another collection of the same database,
// and of the database, in a rebuild the app runs and in one the
// database's worker runs; each returns nil, or one of the errors the
// docs name for that call, before its context's deadline. A call that
// waited for the rebuild running the callback, or for the worker that
// waits for the callback, would run out its deadline.
func TestProgressMayCallEverything(t *testing.T) {
	t.Parallel()
	for _, by := range []string{"app", "worker"} {
		t.Run(by, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			path := appDB(t, ids("a", 30_000)...)
			app := rawDB(t, path)
			mustExec(t, app, `CREATE TABLE others (id TEXT PRIMARY KEY, body TEXT)`)
			mustExec(t, app, `CREATE TABLE thirds (id TEXT PRIMARY KEY, body TEXT)`)
			mustExec(t, app, `INSERT INTO others (id, body) SELECT replace(id, 'a-', 'b-'), body FROM records`)
			cfg, h := hooked(config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}})
			db, err := OpenDB(ctx, cfg.DBConfig)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close(ctx) })
			bSrc := Source{Table: "others", Column: "id", Snapshot: path + ".others.sfb"}
			var b *Index

			var (
				a       atomic.Pointer[Index]
				fired   atomic.Bool // the callback calls everything once (the own Rebuild it calls runs it again)
				results = make(chan []string, 1)
			)
			progress := func(done, total int64) {
				ix := a.Load()
				if ix == nil {
					return
				}
				if fired.CompareAndSwap(false, true) {
					results <- callEverything(db, ix, b)
				}
			}
			src := Source{Table: "records", Column: "id", Snapshot: path + ".records.sfb", Progress: progress, ProgressEvery: 1000}
			if by == "app" {
				if b, err = db.Index(ctx, bSrc); err != nil {
					t.Fatal(err)
				}
				if err := b.Wait(ctx); err != nil {
					t.Fatal(err)
				}
				src.Progress = nil // the first scan runs without the callback
				ix, err := db.Index(ctx, src)
				if err != nil {
					t.Fatal(err)
				}
				if err := ix.Wait(ctx); err != nil {
					t.Fatal(err)
				}
				if err := ix.Close(ctx); err != nil {
					t.Fatal(err)
				}
				src.Progress = progress
				if ix, err = db.Index(ctx, src); err != nil {
					t.Fatal(err)
				}
				a.Store(ix)
				rctx, cancel := context.WithTimeout(ctx, progressBound)
				defer cancel()
				if err := ix.Rebuild(rctx); err != nil && !errors.Is(err, ErrClosed) {
					t.Fatalf("Rebuild whose Progress calls everything: %v", err)
				}
			} else {
				// The first scan of records runs on the worker, with the
				// callback; the first scan of others is queued behind it
				// (the worker's scans wait at their start until both
				// indexes are open), so the callback's other.Wait waits
				// for the worker. The test learns the index once Index
				// returns.
				gate := make(chan struct{})
				hold := func(n int64) error {
					if n == 0 {
						<-gate
					}
					return nil
				}
				h.scanRow.Store(&hold)
				started := make(chan struct{})
				src.Progress = func(done, total int64) {
					select {
					case <-started:
						progress(done, total)
					default:
					}
				}
				ix, err := db.Index(ctx, src)
				if err != nil {
					t.Fatal(err)
				}
				a.Store(ix)
				if b, err = db.Index(ctx, bSrc); err != nil {
					t.Fatal(err)
				}
				firstCall(t, ix) // the first scans start after a call
				firstCall(t, b)
				close(started)
				close(gate)
			}
			var lines []string
			select {
			case lines = <-results:
			case <-time.After(2 * progressBound):
				t.Fatalf("the Progress callback never ran, or never returned:\n%s", allStacks())
			}
			if len(lines) > 0 {
				t.Fatalf("from a Progress callback:\n%s", strings.Join(lines, "\n"))
			}
		})
	}
}

// callEverything calls every public method of ix (whose rebuild runs the
// caller), of other and of db, each with a context that ends after
// progressBound, and returns a line for each that failed other than as
// its docs say. The closes come last.
func callEverything(db *DB, ix, other *Index) (bad []string) {
	type step struct {
		name string
		run  func(ctx context.Context) error
		ok   []error // documented errors besides nil
	}
	var steps []step
	for _, x := range []struct {
		name string
		ix   *Index
	}{{"own", ix}, {"other", other}} {
		x := x
		steps = append(steps,
			step{x.name + ".Fetched", func(ctx context.Context) error { _, err := x.ix.Fetched(ctx, "a-0000001"); return err }, nil},
			step{x.name + ".Missing", func(ctx context.Context) error {
				_, err := x.ix.Missing(ctx, []string{"a-0000001", "b-0000002", "never"})
				return err
			}, nil},
			step{x.name + ".Stats", func(context.Context) error { _ = stats(x.ix); return nil }, nil},
			step{x.name + ".DatasetID", func(context.Context) error { _, _ = datasetID(x.ix); return nil }, nil},
			step{x.name + ".MarkFetched", func(ctx context.Context) error { return x.ix.MarkFetched(ctx, "k") }, []error{ErrBadConfig}},
			// Wait returns once the rebuild counts as done, which it does
			// before its last Progress call; ErrNotServing if it failed.
			step{x.name + ".Wait", func(ctx context.Context) error { return x.ix.Wait(ctx) }, []error{ErrNotServing}},
			// Save with no filter serving (the own index rebuilds): ErrNotServing.
			step{x.name + ".Save", func(ctx context.Context) error { return x.ix.Save(ctx) }, []error{ErrNotServing}},
			step{x.name + ".Reload", func(ctx context.Context) error { return x.ix.k.Reload(ctx) }, []error{ErrNotServing}},
			step{x.name + ".Rebuild", func(ctx context.Context) error { return x.ix.Rebuild(ctx) }, nil},
		)
	}
	steps = append(steps,
		step{"db.Sources", func(ctx context.Context) error { _, err := sources(ctx, db); return err }, nil},
		step{"db.Index", func(ctx context.Context) error {
			third, err := db.Index(ctx, Source{Table: "thirds", Column: "id"})
			if err != nil {
				return err
			}
			if _, err := third.Missing(ctx, []string{"x"}); err != nil {
				return err
			}
			return third.Close(ctx)
		}, nil},
		step{"db.Suspend", func(ctx context.Context) error {
			err := db.Suspend(ctx)
			if _, qerr := other.Missing(ctx, []string{"b-0000003"}); qerr != nil { // exact while suspended
				err = errors.Join(err, qerr)
			}
			db.Resume()
			return err
		}, nil},
		step{"other.Close", func(ctx context.Context) error { return other.Close(ctx) }, nil},
		step{"own.Close", func(ctx context.Context) error { return ix.Close(ctx) }, nil},
	)
	for _, s := range steps {
		ctx, cancel := context.WithTimeout(context.Background(), progressBound)
		err := s.run(ctx)
		ended := ctx.Err()
		cancel()
		if ended != nil {
			bad = append(bad, fmt.Sprintf("%s ran out its %v: %v", s.name, progressBound, err))
			continue
		}
		if err == nil {
			continue
		}
		documented := false
		for _, want := range s.ok {
			documented = documented || errors.Is(err, want)
		}
		if !documented {
			bad = append(bad, fmt.Sprintf("%s: %v", s.name, err))
		}
	}
	return bad
}

// TestQueriesFromProgress: Fetched, Missing and Stats called from inside
// Source.Progress (during the app's Rebuild and during the worker's)
// return and answer exactly, with a single reading connection
// (DBConfig.Readers 1): the scan running the callback holds no connection
// the queries need.
func TestQueriesFromProgress(t *testing.T) {
	t.Parallel()
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
		_ = stats(ix)
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

// panicky is a Source.Progress that panics once, the first time it runs
// while armed, with a value of its own; panicked is closed just before.
// With hold set, that call first waits until hold is closed.
type panicky struct {
	armed    atomic.Bool
	value    string
	panics   atomic.Int64
	panicked chan struct{}
	hold     chan struct{} // nil: panic at once
	held     chan struct{} // closed when the call waits for hold
}

func newPanicky(value string) *panicky {
	return &panicky{value: value, panicked: make(chan struct{}), held: make(chan struct{})}
}

func (p *panicky) progress(done, total int64) {
	if !p.armed.CompareAndSwap(true, false) {
		return
	}
	if p.hold != nil {
		close(p.held)
		<-p.hold
	}
	p.panics.Add(1)
	close(p.panicked)
	panic(p.value)
}

// stopUntilPanic makes the scan wait, from its second chunk on, until p
// has panicked: the panic, set off by the first chunk's Progress call,
// then reaches the scan before it ends, whatever the machine's speed.
func stopUntilPanic(p *panicky) func(n int64) error {
	return func(n int64) error {
		if n >= 2*panicChunk {
			select {
			case <-p.panicked:
			case <-time.After(callBound):
			}
		}
		return nil
	}
}

// panicChunk is the scans' chunk, and the keys between Progress calls,
// in the tests of a panicking Progress: the first chunk's call panics.
const panicChunk = 100

// rebuildRecovering runs the app's Rebuild the way an app that recovers
// around it does, and returns its error and what it panicked with.
func rebuildRecovering(ctx context.Context, ix *Index) (panicked any, err error) {
	defer func() { panicked = recover() }()
	return nil, ix.Rebuild(ctx)
}

// TestProgressPanicInTheAppsRebuild: a Progress callback that panics
// during the app's Rebuild stops the rebuild, and the panic goes on in
// Rebuild's caller; the index is back where it was (the filter that
// served serves again, or bypass), not rebuilding, its next answers
// exact, rows stored afterwards seen, and a later Rebuild works; after
// Close no goroutine is left. A panic in a call delivered after the scan
// ended (the scan never waits for the callback) cannot stop the rebuild:
// it goes on in the caller all the same, the new filter serves, and
// nothing is left rebuilding or running.
func TestProgressPanicInTheAppsRebuild(t *testing.T) {
	// Not parallel: counts the process's goroutines.
	for _, tc := range []struct {
		name    string
		serving bool // a filter serves before the Rebuild
		late    bool // the callback panics once the scan has ended
	}{
		{"serving", true, false},
		{"bypass", false, false},
		{"serving, panic after the scan", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			seed := ids("seed", 3000)
			path := appDB(t, seed...)
			p := newPanicky("progress panics in the app's rebuild")
			cfg, hk := hooked(appConfig(path))
			cfg.knobs.store.ScanChunk = panicChunk
			cfg.ProgressEvery, cfg.Progress = panicChunk, p.progress
			if !tc.serving {
				// No snapshot and no rebuild by itself: nothing serves
				// until the app rebuilds.
				cfg.Snapshot, cfg.NoAutoRebuild = "", true
				if err := attachOnly(ctx, path); err != nil {
					t.Fatal(err)
				}
			}
			app := rawDB(t, path) // the app's connection, open before the count
			baseline := baselineGoroutines()
			ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
			if err != nil {
				t.Fatal(err)
			}
			if err := ix.Wait(ctx); tc.serving && err != nil || !tc.serving && !errors.Is(err, ErrNotServing) {
				t.Fatalf("Wait = %v", err)
			}
			before := stats(ix)
			if before.Serving != tc.serving || before.Rebuilding {
				t.Fatalf("before: serving %v, rebuilding %v", before.Serving, before.Rebuilding)
			}
			page := slices.Concat(seed[:50], ids("never", 50), []string{seed[7], "never-0000003"})
			judgePage(t, ix, storedCanon(t, path, "records"), page, false, "before")

			var panicked any
			if tc.late {
				p.hold = make(chan struct{})
				p.armed.Store(true)
				done := make(chan any, 1)
				go func() {
					v, _ := rebuildRecovering(ctx, ix)
					done <- v
				}()
				waitClosed(t, p.held, "the first Progress call")
				waitFor(t, "the rebuild's filter serving", func() bool { return stats(ix).Rebuilds == before.Rebuilds+1 })
				close(p.hold)
				panicked = <-done
			} else {
				hk.scanRow.Store(ptr(stopUntilPanic(p)))
				p.armed.Store(true)
				panicked, _ = rebuildRecovering(ctx, ix)
				hk.scanRow.Store(nil)
			}
			if panicked != p.value || p.panics.Load() != 1 {
				t.Fatalf("Rebuild panicked with %v (the callback panicked %d times), want the callback's panic", panicked, p.panics.Load())
			}
			st := stats(ix)
			switch {
			case st.Rebuilding:
				t.Fatal("after the panic: still rebuilding")
			case tc.late && (!st.Serving || st.Rebuilds != before.Rebuilds+1):
				t.Fatalf("after a late panic: serving %v, rebuilds %d → %d; want the new filter serving", st.Serving, before.Rebuilds, st.Rebuilds)
			case !tc.late && (st.Serving != tc.serving || st.Rebuilds != before.Rebuilds || st.Generation != before.Generation):
				t.Fatalf("after the panic: serving %v (want %v), rebuilds %d → %d, generation %d → %d: want the state before",
					st.Serving, tc.serving, before.Rebuilds, st.Rebuilds, before.Generation, st.Generation)
			}
			judgePage(t, ix, storedCanon(t, path, "records"), page, true, "after the panic")
			later := ids("later", 40)
			insertIDs(t, app, later...)
			judgePage(t, ix, storedCanon(t, path, "records"), slices.Concat(page, later), true, "rows stored after the panic")

			rebuilds := stats(ix).Rebuilds
			if panicked, err := rebuildRecovering(ctx, ix); err != nil || panicked != nil {
				t.Fatalf("the next Rebuild = %v, panicked %v", err, panicked)
			}
			if st := stats(ix); !st.Serving || st.Rebuilding || st.Rebuilds != rebuilds+1 {
				t.Fatalf("after the next Rebuild: serving %v, rebuilding %v, rebuilds %d → %d", st.Serving, st.Rebuilding, rebuilds, st.Rebuilds)
			}
			judgePage(t, ix, storedCanon(t, path, "records"), slices.Concat(page, later), false, "after the next Rebuild")
			if err := ix.Close(ctx); err != nil {
				t.Fatal(err)
			}
			goroutinesBackTo(t, baseline)
		})
	}
}

// TestProgressPanicInTheWorkersRebuild: a Progress callback that panics
// during a rebuild the database's worker runs (the first scan of a
// source, or the rebuild asked for because the snapshot is gone) stops
// that rebuild; the panic is reported in Stats.LastError (and Wait
// fails), the index is not left rebuilding, answers exactly from SQLite,
// and after Close no goroutine is left.
func TestProgressPanicInTheWorkersRebuild(t *testing.T) {
	// Not parallel: counts the process's goroutines.
	for _, first := range []bool{true, false} {
		name := "snapshot gone"
		if first {
			name = "first scan"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			seed := ids("seed", 3000)
			path := appDB(t, seed...)
			p := newPanicky("progress panics in the worker's rebuild")
			cfg := appConfig(path)
			if !first {
				if err := attachOnly(ctx, path); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(cfg.Snapshot); !os.IsNotExist(err) {
					t.Fatalf("a snapshot at %s: %v", cfg.Snapshot, err)
				}
			}
			cfg.knobs.store.ScanChunk = panicChunk
			cfg.knobs.scanRow = stopUntilPanic(p)
			cfg.knobs.retryFirst = time.Hour // no retry before the test looks
			cfg.ProgressEvery, cfg.Progress = panicChunk, p.progress
			p.armed.Store(true)
			baseline := baselineGoroutines()
			ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
			if err != nil {
				t.Fatal(err)
			}
			if err := ix.Wait(ctx); err == nil {
				t.Fatal("Wait = nil after the rebuild's Progress panicked")
			}
			waitFor(t, "the panic in Stats.LastError", func() bool {
				err := stats(ix).LastError
				return err != nil && strings.Contains(err.Error(), p.value)
			})
			if n := p.panics.Load(); n != 1 {
				t.Fatalf("the callback panicked %d times", n)
			}
			if st := stats(ix); st.Rebuilding || st.Serving || st.Rebuilds != 0 {
				t.Fatalf("after the panic: rebuilding %v, serving %v, rebuilds %d", st.Rebuilding, st.Serving, st.Rebuilds)
			}
			page := slices.Concat(seed[:50], ids("never", 50), []string{seed[7], "never-0000003"})
			judgePage(t, ix, storedCanon(t, path, "records"), page, true, fmt.Sprintf("%s, after the panic", name))
			if err := ix.Close(ctx); err != nil {
				t.Fatal(err)
			}
			goroutinesBackTo(t, baseline)
		})
	}
}

// TestProgressInTheFirstScanOfAnEmptyTable: DB.Index scans an empty
// table before it returns; a Progress callback of that scan that
// suspends the database (and resumes it), or closes it, returns, and so
// does DB.Index.
func TestProgressInTheFirstScanOfAnEmptyTable(t *testing.T) {
	t.Parallel()
	for _, what := range []string{"Suspend", "Close"} {
		t.Run(what, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, err := OpenDB(ctx, DBConfig{Path: appDB(t), Driver: testdriver.Driver()})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				c, cancel := context.WithTimeout(ctx, progressBound)
				defer cancel()
				_ = db.Close(c)
			}()
			var called atomic.Bool
			var cerr error
			src := Source{Table: "records", Column: "id", Progress: func(done, total int64) {
				if called.Swap(true) {
					return
				}
				c, cancel := context.WithTimeout(ctx, progressBound)
				defer cancel()
				if what == "Suspend" {
					cerr = db.Suspend(c)
					db.Resume()
				} else {
					cerr = db.Close(c)
				}
			}}
			type opened struct {
				ix  *Index
				err error
			}
			done := make(chan opened, 1)
			go func() {
				ix, err := db.Index(ctx, src)
				done <- opened{ix, err}
			}()
			var ix *Index
			select {
			case o := <-done:
				ix, err = o.ix, o.err
			case <-time.After(2 * progressBound):
				t.Fatalf("DB.Index did not return (%s from Progress)", what)
			}
			if !called.Load() {
				t.Fatal("Progress was not called")
			}
			if cerr != nil {
				t.Fatalf("%s from Progress = %v", what, cerr)
			}
			if what == "Close" {
				if !errors.Is(err, ErrClosed) {
					if err != nil {
						t.Fatal(err)
					}
					if _, err := ix.Missing(ctx, []string{"x"}); !errors.Is(err, ErrClosed) {
						t.Fatalf("Missing after the database closed = %v, want ErrClosed", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			expect(t, ix, nil, []string{"x"})
		})
	}
}
