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
)

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
// in the tests of this file: the first chunk's call panics.
const panicChunk = 100

// rebuildRecovering runs the app's Rebuild the way an app that recovers
// around it does, and returns its error and what it panicked with.
func rebuildRecovering(ctx context.Context, ix *Index) (err error, panicked any) {
	defer func() { panicked = recover() }()
	return ix.Rebuild(ctx), nil
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
				cfg.Snapshot, cfg.AutoRebuild.Off = "", true
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
			before := ix.Stats()
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
					_, v := rebuildRecovering(ctx, ix)
					done <- v
				}()
				waitClosed(t, p.held, "the first Progress call")
				waitFor(t, "the rebuild's filter serving", func() bool { return ix.Stats().Rebuilds == before.Rebuilds+1 })
				close(p.hold)
				panicked = <-done
			} else {
				hk.scanRow.Store(ptr(stopUntilPanic(p)))
				p.armed.Store(true)
				_, panicked = rebuildRecovering(ctx, ix)
				hk.scanRow.Store(nil)
			}
			if panicked != p.value || p.panics.Load() != 1 {
				t.Fatalf("Rebuild panicked with %v (the callback panicked %d times), want the callback's panic", panicked, p.panics.Load())
			}
			st := ix.Stats()
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

			rebuilds := ix.Stats().Rebuilds
			if err, panicked := rebuildRecovering(ctx, ix); err != nil || panicked != nil {
				t.Fatalf("the next Rebuild = %v, panicked %v", err, panicked)
			}
			if st := ix.Stats(); !st.Serving || st.Rebuilding || st.Rebuilds != rebuilds+1 {
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
				err := ix.Stats().LastError
				return err != nil && strings.Contains(err.Error(), p.value)
			})
			if n := p.panics.Load(); n != 1 {
				t.Fatalf("the callback panicked %d times", n)
			}
			if st := ix.Stats(); st.Rebuilding || st.Serving || st.Rebuilds != 0 {
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
