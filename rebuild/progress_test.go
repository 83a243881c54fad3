package rebuild

import (
	"context"
	"errors"
	"fmt"
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
	for _, by := range []string{"app", "worker"} {
		t.Run(by, func(t *testing.T) {
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
			step{x.name + ".Stats", func(context.Context) error { _ = x.ix.Stats(); return nil }, nil},
			step{x.name + ".DatasetID", func(context.Context) error { _, _ = x.ix.DatasetID(); return nil }, nil},
			step{x.name + ".MarkFetched", func(ctx context.Context) error { return x.ix.MarkFetched(ctx, "k") }, []error{ErrNotOwnTable}},
			// Wait returns once the rebuild counts as done, which it does
			// before its last Progress call; ErrNotServing if it failed.
			step{x.name + ".Wait", func(ctx context.Context) error { return x.ix.Wait(ctx) }, []error{ErrNotServing}},
			// Save with no filter serving (the own index rebuilds): ErrNotServing.
			step{x.name + ".Save", func(ctx context.Context) error { return x.ix.Save(ctx) }, []error{ErrNotServing}},
			step{x.name + ".Reload", func(ctx context.Context) error { return x.ix.Reload(ctx) }, []error{ErrNotServing}},
			step{x.name + ".Rebuild", func(ctx context.Context) error { return x.ix.Rebuild(ctx) }, nil},
		)
	}
	steps = append(steps,
		step{"db.Path", func(context.Context) error { _ = db.Path(); return nil }, nil},
		step{"db.Sources", func(ctx context.Context) error { _, err := db.Sources(ctx); return err }, nil},
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
