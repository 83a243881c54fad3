package rebuild

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// TestSuspendLetsGoOfTheDatabase: once Suspend returns, the library holds
// no descriptor of the database's files (so no SQLite lock or
// transaction), background work stops where it is (a rebuild's scan
// interrupted, asked again), calls are still answered exactly, each
// letting go of what it opened before it returns, and after Resume the
// interrupted rebuild completes.
func TestSuspendLetsGoOfTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 1000)...)
	db, ix, release := openParkedScan(t, path)
	suspended := make(chan error, 1)
	go func() { suspended <- db.Suspend(ctx) }()
	waitFor(t, "Suspend waiting for the scan", db.bg.Paused) // the worker paused: its job interrupted
	close(release)
	select {
	case err := <-suspended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(callBound):
		t.Fatal("Suspend did not return")
	}
	if st := stats(ix); st.Serving || !strings.Contains(st.Upkeep, "rebuild") {
		t.Fatalf("after Suspend: serving %v, upkeep %q; want the interrupted rebuild still asked for", st.Serving, st.Upkeep)
	}
	checkNoFiles := func(when string) {
		t.Helper()
		if _, all := openFiles(t, path); all > 0 {
			t.Fatalf("%s: the library still holds %d descriptors of the database's files", when, all)
		}
	}
	checkNoFiles("after Suspend")

	// The app writes while the library is suspended, and asks.
	app, err := testdriver.Open(path, testdriver.App{JournalMode: "WAL", BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	insertIDs(t, app, ids("while", 50)...)
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	expect(t, ix, set(ids("seed", 1000), ids("while", 50)), slices.Concat(ids("seed", 30), ids("while", 50), ids("never", 30)))
	checkNoFiles("after calls made while suspended")
	time.Sleep(50 * time.Millisecond) // nothing starts meanwhile
	if st := stats(ix); st.Serving || st.Rebuilds != 0 {
		t.Fatalf("while suspended: serving %v after %d rebuilds: background work ran", st.Serving, st.Rebuilds)
	}
	checkNoFiles("while suspended")

	db.Resume()
	if err := ix.Wait(ctx); err != nil {
		t.Fatalf("after Resume: %v", err)
	}
	if st := stats(ix); !st.Serving {
		t.Fatalf("after Resume: no filter serving (upkeep %q)", st.Upkeep)
	}
	expect(t, ix, set(ids("seed", 1000), ids("while", 50)), slices.Concat(ids("seed", 30), ids("while", 50), ids("never", 30)))
}

// TestSuspendWaitsForWait: a Wait catching the filter up reads the
// database as any call does: Suspend waits for it, and once Suspend
// returns nil the library holds no descriptor of the database's files.
func TestSuspendWaitsForWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 500)...)
	cfg, block, entered, release := blockCatchUp(appConfig(path))
	cfg.knobs.noFollow = true
	ix := open(t, cfg)
	app := rawDB(t, path)
	insertIDs(t, app, ids("page", 200)...)
	_ = app.Close()
	block.Store(true)
	waited := make(chan error, 1)
	go func() { waited <- ix.Wait(ctx) }()
	select {
	case <-entered:
	case <-time.After(callBound):
		t.Fatal("Wait never caught up")
	}
	suspended := make(chan error, 1)
	go func() { suspended <- ix.db.Suspend(ctx) }()
	select {
	case err := <-suspended:
		t.Fatalf("Suspend returned (%v) while a Wait read the database", err)
	case <-time.After(100 * time.Millisecond):
	}
	block.Store(false)
	close(release)
	if err := <-waited; err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if err := <-suspended; err != nil {
		t.Fatalf("Suspend: %v", err)
	}
	if n, _ := openFiles(t, path); n != 0 {
		t.Fatalf("suspended, the library holds %d descriptors of the database's files", n)
	}
	ix.db.Resume()
}

// TestSuspendHoldsNoConnection: once Suspend returns, the library holds
// no descriptor of the database's files (so no SQLite lock) and starts
// nothing: a rebuild in progress is interrupted and waits for Resume.
// Calls meanwhile are answered exactly, each closing what it opened
// before it returns, on a source with a log and on one without (whose
// PRAGMA data_version connection is closed again too). After Resume the
// interrupted rebuild runs and the filter serves.
func TestSuspendHoldsNoConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 3000)
	path := appDB(t, seed...)
	{
		app := rawDB(t, path)
		mustExec(t, app, `CREATE TABLE notes (id TEXT PRIMARY KEY)`)
		mustExec(t, app, `INSERT INTO notes (id) VALUES ('cafe`+"\u0301"+`')`) // stored NFD
		_ = app.Close()
	}
	cfg := appConfig(path)
	cfg.knobs.store.ScanChunk = 16 // a first scan of many chunks
	cfg, h := hooked(cfg)
	started := make(chan struct{})
	var once sync.Once
	slow := func(n int64) error {
		if n > 0 {
			once.Do(func() { close(started) })
			time.Sleep(time.Millisecond)
		}
		return nil
	}
	h.scanRow.Store(&slow)
	db, err := OpenDB(ctx, cfg.DBConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	own, err := db.Index(ctx, Source{}) // the library's own table: MarkFetched (its empty table scanned at once, before the other scan holds the turn)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := db.Index(ctx, cfg.Source) // the first scan asked for after its first call
	if err != nil {
		t.Fatal(err)
	}
	firstCall(t, ix)
	ro, err := OpenDB(ctx, DBConfig{Path: path, ReadOnly: true, Driver: testdriver.Driver()})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close(ctx)
	notes, err := ro.Index(ctx, Source{Table: "notes", Column: "id"}) // never attached: no log
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := notes.Fetched(ctx, "caf\u00e9"); err != nil || !ok { // reads data_version on a connection kept for it
		t.Fatalf("Fetched before Suspend = %v, %v", ok, err)
	}
	<-started

	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, d := range []*DB{db, ro} {
		if err := d.Suspend(sctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, open := openFiles(t, path); open > 0 {
		t.Fatalf("after Suspend the process holds %d descriptors of the database's files", open)
	}
	if st := stats(ix); st.Serving || !strings.Contains(st.Upkeep, "rebuild") {
		t.Fatalf("after Suspend: serving %v, upkeep %q; want the interrupted first scan pending", st.Serving, st.Upkeep)
	}

	// Calls while suspended: exact, and nothing left open.
	{
		app := rawDB(t, path)
		insertIDs(t, app, "while-suspended")
		_ = app.Close()
	}
	probe := append(slices.Clone(seed[:50]), "while-suspended", "never-1", "never-2")
	expect(t, ix, set(seed, []string{"while-suspended"}), probe)
	if ok, err := notes.Fetched(ctx, "cafe\u0301"); err != nil || !ok {
		t.Fatalf("Fetched while suspended = %v, %v", ok, err)
	}
	if ok, err := notes.Fetched(ctx, "na\u00efve"); err != nil || ok {
		t.Fatalf("Fetched(never stored) while suspended = %v, %v", ok, err)
	}
	// A write while suspended: its transaction's connection is closed as
	// soon as it is given back, after the statement prepared on it.
	if err := own.MarkFetched(ctx, "marked-while-suspended"); err != nil {
		t.Fatal(err)
	}
	if ok, err := own.Fetched(ctx, "marked-while-suspended"); err != nil || !ok {
		t.Fatalf("Fetched(marked while suspended) = %v, %v", ok, err)
	}
	// Save and Rebuild write files and scan: refused while suspended.
	if err := ix.Save(ctx); !errors.Is(err, ErrSuspended) {
		t.Fatalf("Save while suspended = %v, want ErrSuspended", err)
	}
	if err := ix.Rebuild(ctx); !errors.Is(err, ErrSuspended) {
		t.Fatalf("Rebuild while suspended = %v, want ErrSuspended", err)
	}
	time.Sleep(50 * time.Millisecond) // nothing starts meanwhile
	if _, open := openFiles(t, path); open > 0 {
		t.Fatalf("after calls while suspended the process holds %d descriptors of the database's files", open)
	}
	if stats(ix).Serving {
		t.Fatal("a filter was built while suspended")
	}

	db.Resume()
	ro.Resume()
	h.scanRow.Store(nil)
	waitServing(t, ix)
	expect(t, ix, set(seed, []string{"while-suspended"}), probe)
}

// TestSuspendErrorNamesEachCauseOnce: Suspend with a context of a
// millisecond while the worker's scan runs (held in it), with a call in
// progress on another collection's index, returns the context's error,
// whose text names each cause once: "context deadline exceeded" once,
// however many of its waits (the worker, the follower, each index's
// work) ran out of that context; the other collection's Rebuild is
// interrupted (ErrSuspended). Once the scan is let go and a second
// Suspend has returned, Resume, and the work completes.
func TestSuspendErrorNamesEachCauseOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := modeDB(t, "wal", []string{"records", "others"}, ids("seed", 500)...)
	hk := &hooks{}
	entered, release := scanGate(t, hk)
	queued := make(chan struct{}, 8)
	db, err := OpenDB(ctx, DBConfig{Path: path, Driver: testdriver.Driver(), knobs: hk.knobsOf(knobs{appQueued: func() { queued <- struct{}{} }})})
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
	firstCall(t, ix) // the first scans start after a call
	firstCall(t, other)
	waitClosed(t, entered, "the first scan")
	// A Rebuild of the other collection waits for the database's scans
	// turn: work in progress on a second index.
	waiting := make(chan error, 1)
	go func() { waiting <- other.Rebuild(ctx) }()
	waitClosed(t, queued, "the other Rebuild queued") // a value received
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
	if err := <-waiting; !errors.Is(err, ErrSuspended) {
		t.Fatalf("the other collection's Rebuild, interrupted by Suspend = %v, want ErrSuspended", err)
	}
	if err := ix.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	judgePage(t, ix, storedCanon(t, path, "records"), append(ids("seed", 20), ids("never", 20)...), true, "after Resume")
}

// TestResumeBeforeTheInterruptedJobStopped: Suspend whose context ends
// while the worker's rebuild is still scanning (held in its scan), then
// Resume before that rebuild has stopped: the rebuild Suspend
// interrupted runs again, as it does after a Suspend that returned nil
// ("DB.Resume goes on where the work was interrupted"), and a filter
// serves.
func TestResumeBeforeTheInterruptedJobStopped(t *testing.T) {
	t.Parallel()
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
		t.Fatalf("Wait after Resume = %v (Stats: serving %v, upkeep %q, last error %v)", err, stats(ix).Serving, stats(ix).Upkeep, stats(ix).LastError)
	}
	if !stats(ix).Serving {
		t.Fatal("no filter serving after Resume")
	}
	judgePage(t, ix, storedCanon(t, path, "records"), append(seed[:20], ids("never", 20)...), true, "after Resume")
}

// TestSuspendUnderCallsThatKeepComing: goroutines that ask back to back,
// a call of one always in progress, do not keep Suspend waiting: it waits
// for the calls that began before it and returns nil; the calls go on,
// answered exactly, and Resume follows.
func TestSuspendUnderCallsThatKeepComing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 2000)
	ix := open(t, appConfig(appDB(t, seed...)))
	db := ix.db
	stop := make(chan struct{})
	var callers sync.WaitGroup
	for g := range 4 {
		callers.Add(1)
		go func() {
			defer callers.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				page := []string{seed[(g*500+i)%len(seed)], "never"}
				got, err := ix.Missing(ctx, page)
				if err != nil || !slices.Equal(got, []bool{false, true}) {
					t.Errorf("Missing(%q) = %v, %v", page, got, err)
					return
				}
			}
		}()
	}
	defer func() { close(stop); callers.Wait() }()
	time.Sleep(50 * time.Millisecond) // the callers under way
	sctx, cancel := context.WithTimeout(ctx, progressBound)
	defer cancel()
	if err := db.Suspend(sctx); err != nil {
		t.Fatalf("Suspend under calls that keep coming = %v", err)
	}
	db.Resume()
}

// TestSuspendInterruptsTheAppsRebuild: Suspend interrupts a Rebuild the
// app runs, as it does the worker's jobs: the Rebuild returns
// ErrSuspended, the library then holds no descriptor of the database, the
// filter that served before still answers, a Rebuild asked while
// suspended is refused with ErrSuspended, and after Resume a Rebuild
// completes.
func TestSuspendInterruptsTheAppsRebuild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 20000)
	path := appDB(t, seed...)
	cfg, hk := hooked(appConfig(path))
	cfg.knobs.store.ScanChunk = 1000
	ix := open(t, cfg)
	waitServing(t, ix)
	in := make(chan struct{})
	var once sync.Once
	hk.scanRow.Store(ptr(func(n int64) error {
		if n > 0 {
			once.Do(func() { close(in) })
			time.Sleep(50 * time.Millisecond) // 20 chunks: a scan far longer than Suspend
		}
		return nil
	}))
	pristine, snap := schema(t, path), readFile(t, cfg.Snapshot)
	rebuilt := make(chan error, 1)
	go func() { rebuilt <- ix.Rebuild(ctx) }()
	<-in
	sctx, cancel := context.WithTimeout(ctx, progressBound)
	defer cancel()
	if err := ix.db.Suspend(sctx); err != nil {
		t.Fatalf("Suspend during the app's Rebuild = %v", err)
	}
	if err := <-rebuilt; !errors.Is(err, ErrSuspended) {
		t.Fatalf("the app's Rebuild interrupted by Suspend = %v, want ErrSuspended", err)
	}
	if n, _ := openFiles(t, path); n != 0 {
		t.Fatalf("%d descriptors of the database held after Suspend", n)
	}
	if err := ix.Rebuild(ctx); !errors.Is(err, ErrSuspended) {
		t.Fatalf("Rebuild while suspended = %v, want ErrSuspended", err)
	}
	// Nothing of the interrupted Rebuild is left: the schema is the
	// app's, the snapshot the one saved before, and the app writes.
	if !bytes.Equal(schema(t, path), pristine) {
		t.Fatal("the interrupted Rebuild changed sqlite_master")
	}
	if !bytes.Equal(readFile(t, cfg.Snapshot), snap) {
		t.Fatal("the interrupted Rebuild replaced the snapshot")
	}
	insertIDs(t, rawDB(t, path), "while-suspended")
	expect(t, ix, set(seed, []string{"while-suspended"}), []string{seed[7], "while-suspended", "never"})
	if !stats(ix).Serving {
		t.Fatal("the filter that served before the interrupted Rebuild no longer serves")
	}
	ix.db.Resume()
	hk.scanRow.Store(nil)
	if err := ix.Rebuild(ctx); err != nil {
		t.Fatalf("Rebuild after Resume = %v", err)
	}
}

// TestSuspendAfterTheRebuildPublished: a Suspend that comes once the
// app's Rebuild has published its filter (here from the knob right after
// the publication, where the last Progress call may run) does not undo
// it: the Rebuild returns nil, its scan is recorded in the database and
// its filter serves.
func TestSuspendAfterTheRebuildPublished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 2000)...)
	cfg := appConfig(path)
	var ixp atomic.Pointer[Index]
	suspended := make(chan error, 1)
	cfg.knobs.published = func() {
		ix := ixp.Load()
		if ix == nil {
			return
		}
		go func() { suspended <- ix.db.Suspend(ctx) }()
		waitFor(t, "Suspend under way", ix.db.bg.Paused)
	}
	ix := open(t, cfg)
	waitServing(t, ix)
	ixp.Store(ix)
	if err := ix.Rebuild(ctx); err != nil {
		t.Fatalf("Rebuild with a Suspend after its publication = %v, want nil", err)
	}
	ixp.Store(nil)
	if err := <-suspended; err != nil {
		t.Fatal(err)
	}
	ix.db.Resume()
	if st := stats(ix); !st.Serving || st.LastError != nil {
		t.Fatalf("after the Rebuild: serving %v, last error %q", st.Serving, st.LastError)
	}
	var scanned int
	if err := rawDB(t, path).QueryRow(`SELECT scanned FROM syncfilter_sources WHERE tbl = 'records'`).Scan(&scanned); err != nil || scanned != 1 {
		t.Fatalf("the scan's record: scanned %d, %v", scanned, err)
	}
}

// TestSuspendInterruptsARebuildThatAttached: the app's Rebuild that
// attached the source again (after a Detach) and is interrupted by
// Suspend keeps the attach, and the worker scans after Resume: the
// filter serves again, and rows written since are answered.
func TestSuspendInterruptsARebuildThatAttached(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 20000)
	path := appDB(t, seed...)
	cfg, hk := hooked(appConfig(path))
	cfg.knobs.store.ScanChunk = 1000
	ix := open(t, cfg)
	waitServing(t, ix)
	if err := Detach(ctx, DBConfig{Path: path, Driver: cfg.Driver}, "records", "id"); err != nil {
		t.Fatal(err)
	}
	expect(t, ix, set(seed), []string{seed[1], "never"})
	in, release := scanGate(t, hk)
	rebuilt := make(chan error, 1)
	go func() { rebuilt <- ix.Rebuild(ctx) }()
	waitClosed(t, in, "the Rebuild's scan")
	suspended := make(chan error, 1)
	go func() { suspended <- ix.db.Suspend(ctx) }()
	waitFor(t, "Suspend under way", ix.db.bg.Paused)
	release()
	if err := <-rebuilt; !errors.Is(err, ErrSuspended) {
		t.Fatalf("the interrupted Rebuild = %v, want ErrSuspended", err)
	}
	if err := <-suspended; err != nil {
		t.Fatal(err)
	}
	hk.scanRow.Store(nil)
	ix.db.Resume()
	waitServing(t, ix)
	insertIDs(t, rawDB(t, path), "after")
	expect(t, ix, set(seed, []string{"after"}), []string{seed[1], "after", "never"})
}

// TestTwoSuspendsAtOnce: two Suspend calls while a scan runs both see the
// background stop, and return nil.
func TestTwoSuspendsAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 1000)...)
	db, ix, release := openParkedScan(t, path)
	tctx, cancel := context.WithTimeout(ctx, callBound)
	defer cancel()
	suspended := make(chan error, 2)
	for range 2 {
		go func() { suspended <- db.Suspend(tctx) }()
	}
	waitFor(t, "Suspend waiting for the scan", db.bg.Paused)
	time.Sleep(20 * time.Millisecond) // the second Suspend waits too
	close(release)
	for range 2 {
		if err := <-suspended; err != nil {
			t.Fatalf("Suspend: %v", err)
		}
	}
	db.Resume()
	if err := ix.Wait(ctx); err != nil {
		t.Fatalf("after Resume: %v", err)
	}
	expect(t, ix, set(ids("seed", 1000)), slices.Concat(ids("seed", 30), ids("never", 30)))
}

// openParkedScan opens an index on path's records, never attached, whose
// first scan is parked at its first row until release is closed.
func openParkedScan(t *testing.T, path string) (db *DB, ix *Index, release chan struct{}) {
	t.Helper()
	ctx := context.Background()
	started := make(chan struct{})
	release = make(chan struct{})
	var once sync.Once
	cfg := config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver(), knobs: knobs{
		store: store.Knobs{ScanChunk: 16},
		scanRow: func(n int64) error {
			if n == 0 {
				once.Do(func() { close(started); <-release })
			}
			return nil
		},
	}}, Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb"}}
	db, err := OpenDB(ctx, cfg.DBConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close(ctx) })
	if ix, err = db.Index(ctx, cfg.Source); err != nil {
		t.Fatal(err)
	}
	firstCall(t, ix)
	select {
	case <-started:
	case <-time.After(callBound):
		t.Fatal("the first scan never started")
	}
	return db, ix, release
}
