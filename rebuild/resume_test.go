package rebuild

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestResumeBeforeTheInterruptedJobStopped: Suspend whose context ends
// while the worker's rebuild is still scanning (held in its scan), then
// Resume before that rebuild has stopped: the rebuild Suspend
// interrupted runs again, as it does after a Suspend that returned nil
// ("DB.Resume goes on where the work was interrupted"), and a filter
// serves.
func TestResumeBeforeTheInterruptedJobStopped(t *testing.T) {
	ctx := context.Background()
	seed := ids("seed", 500)
	path := appDB(t, seed...)
	if err := attachOnly(ctx, path); err != nil { // attached and scanned, no snapshot
		t.Fatal(err)
	}
	cfg, hk := hooked(appConfig(path))
	cfg.knobs.store.ScanChunk = 100 // chunks after the one held: the scan sees Suspend's cancel
	entered, release := scanGate(t, hk)
	ix, err := Open(ctx, cfg.DBConfig, cfg.Source) // serves from SQLite; the worker rebuilds
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close(ctx) })
	t.Cleanup(release)                                  // before Close, on a failure
	if _, err := ix.Fetched(ctx, seed[0]); err != nil { // the first call: the load, which fails, asks for the rebuild
		t.Fatal(err)
	}
	waitClosed(t, entered, "the worker's rebuild")
	sctx, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	if err := ix.db.Suspend(sctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Suspend while the scan is held = %v, want its context's error", err)
	}
	ix.db.Resume()
	release()
	wctx, wcancel := context.WithTimeout(ctx, callBound)
	defer wcancel()
	if err := ix.Wait(wctx); err != nil {
		t.Fatalf("Wait after Resume = %v (Stats: serving %v, upkeep %q, last error %v)", err, ix.Stats().Serving, ix.Stats().Upkeep, ix.Stats().LastError)
	}
	if !ix.Stats().Serving {
		t.Fatal("no filter serving after Resume")
	}
	judgePage(t, ix, storedCanon(t, path, "records"), append(seed[:20], ids("never", 20)...), true, "after Resume")
}
