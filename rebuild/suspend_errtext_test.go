package rebuild

import (
	"context"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// TestSuspendErrorNamesEachCauseOnce: Suspend with a context of a
// millisecond while the worker's scan runs (held in it), with a call in
// progress on another collection's index, returns the context's error,
// whose text names each cause once: "context deadline exceeded" once,
// however many of its waits (the worker, the follower, each index's
// work) ran out of that context. Once the scan is let go and a second
// Suspend has returned, Resume, and the work completes.
func TestSuspendErrorNamesEachCauseOnce(t *testing.T) {
	ctx := context.Background()
	path := modeDB(t, "wal", []string{"records", "others"}, ids("seed", 500)...)
	hk := &hooks{}
	entered, release := scanGate(t, hk)
	db, err := OpenDB(ctx, DBConfig{Path: path, Driver: testdriver.Driver(), knobs: hk.knobsOf(knobs{})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close(ctx) })
	t.Cleanup(release) // before Close, on a failure
	ix, err := db.Index(ctx, Source{Table: "records", Column: "id", Snapshot: path + ".records.sfb"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := db.Index(ctx, Source{Table: "others", Column: "id", Snapshot: path + ".others.sfb"})
	if err != nil {
		t.Fatal(err)
	}
	waitClosed(t, entered, "the first scan")
	// A Rebuild of the other collection waits for the database's scans
	// turn: work in progress on a second index.
	waiting := make(chan error, 1)
	go func() { waiting <- other.Rebuild(ctx) }()
	waitFor(t, "the other Rebuild waiting", func() bool { return other.up.app.Wait() != nil })
	sctx, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	causesOnce(t, "Suspend", db.Suspend(sctx))
	// Suspended once the scan lets go (Suspend again, until it has),
	// then resumed: the scan runs again.
	release()
	if err := db.Suspend(ctx); err != nil {
		t.Fatal(err)
	}
	db.Resume()
	if err := <-waiting; err != nil {
		t.Fatalf("the other collection's Rebuild = %v", err)
	}
	if err := ix.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	judgePage(t, ix, storedCanon(t, path, "records"), append(ids("seed", 20), ids("never", 20)...), true, "after Resume")
}
