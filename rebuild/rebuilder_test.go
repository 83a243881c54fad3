package rebuild

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/snapshot"
)

// TestConcurrentMarkQueryRebuild runs markers, askers and rebuilds at once
// (meant for -race) against an exact reference. A key's state goes from 0
// (never marked) to 1 (being marked) to 2 (MarkFetched returned). An
// answer is checked against the state before and after it: committed
// before → must be fetched; still unmarked after → must be missing.
func TestConcurrentMarkQueryRebuild(t *testing.T) {
	path := filepath.Join(t.TempDir(), "own.db")
	cfg := config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Snapshot: path + ".sfb", Capacity: 2000, ProgressEvery: 100}}
	ix := open(t, cfg)
	ctx := context.Background()
	const n = 6000
	keys := ids("k", n)
	state := make([]atomic.Int32, n)
	var wrong atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for m := 0; m < 3; m++ { // markers
		wg.Add(1)
		go func(m int) {
			defer wg.Done()
			for i := m; i < n; i += 3 * 5 {
				batch := []string{}
				for j := i; j < min(i+3*5, n); j += 3 {
					state[j].Store(1)
					batch = append(batch, keys[j])
				}
				if err := ix.MarkFetched(ctx, batch...); err != nil {
					t.Error(err)
					return
				}
				for j := i; j < min(i+3*5, n); j += 3 {
					state[j].Store(2)
				}
			}
		}(m)
	}
	check := func(i int, before int32, got bool) {
		after := state[i].Load()
		if (before == 2 && !got) || (after == 0 && got) {
			wrong.Add(1)
			t.Errorf("key %d: state %d→%d, answered fetched=%v", i, before, after, got)
		}
	}
	var askers sync.WaitGroup
	for a := 0; a < 3; a++ {
		askers.Add(1)
		go func(seed uint64) {
			defer askers.Done()
			r := rand.New(rand.NewPCG(seed, 1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				if r.IntN(2) == 0 {
					i := r.IntN(n)
					before := state[i].Load()
					got, err := ix.Fetched(ctx, keys[i])
					if err != nil {
						t.Error(err)
						return
					}
					check(i, before, got)
					continue
				}
				page := make([]int, 200)
				before := make([]int32, len(page))
				probe := make([]string, len(page))
				for j := range page {
					page[j] = r.IntN(n)
					before[j] = state[page[j]].Load()
					probe[j] = keys[page[j]]
				}
				missing, err := missingList(ctx, ix, probe)
				if err != nil {
					t.Error(err)
					return
				}
				isMissing := map[string]bool{}
				for _, k := range missing {
					isMissing[k] = true
				}
				for j, i := range page {
					check(i, before[j], !isMissing[keys[i]])
				}
			}
		}(uint64(a))
	}
	rebuilds := 0
	for done := false; !done; {
		if err := ix.Rebuild(ctx); err != nil {
			t.Fatal(err)
		}
		rebuilds++
		select {
		case <-markersDone(&wg):
			done = true
		case <-time.After(time.Duration(rebuilds%3) * 5 * time.Millisecond): // let the new filter serve a while
		}
	}
	close(stop)
	askers.Wait()
	if wrong.Load() > 0 {
		t.Fatalf("%d wrong answers", wrong.Load())
	}
	all := make(map[string]bool, n)
	for _, k := range keys {
		all[k] = true
	}
	expect(t, ix, all, keys[:500])
	t.Logf("%d rebuilds while marking; stats %+v", rebuilds, ix.Stats())
}

func markersDone(wg *sync.WaitGroup) <-chan struct{} {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	return ch
}

// TestCancelledRebuildsLeaveTheGateCorrect cancels rebuilds at random
// points of the scan (the context, which interrupts SQLite, and an error
// from the scan as a failing SQLite read would give): each time the
// previous filter answers again, correctly.
func TestCancelledRebuildsLeaveTheGateCorrect(t *testing.T) {
	seed := ids("seed", 30000)
	path := appDB(t, seed...)
	cfg, hk := hooked(appConfig(path))
	cfg.ProgressEvery = 500
	var cancelAt atomic.Int64
	var cancel atomic.Pointer[context.CancelFunc]
	cfg.Progress = func(done, total int64) {
		if at := cancelAt.Load(); at > 0 && done >= at {
			(*cancel.Load())()
		}
	}
	ix := open(t, cfg)
	if err := ix.Save(context.Background()); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(cfg.Snapshot)
	db := rawDB(t, path)
	r := rand.New(rand.NewPCG(7, 8))
	fetched := set(seed)
	probe := append(slices.Clone(seed[:2000]), ids("never", 2000)...)
	for round := 0; round < 8; round++ {
		extra := ids(fmt.Sprint("r", round), 50)
		insertIDs(t, db, extra...)
		for _, k := range extra {
			fetched[k] = true
		}
		probe = append(probe, extra...)
		at := 1 + r.Int64N(30000)
		var err error
		if round%2 == 0 {
			ctx, c := context.WithCancel(context.Background())
			cancel.Store(&c)
			cancelAt.Store(at)
			err = ix.Rebuild(ctx)
			c()
			cancelAt.Store(0)
			if !errors.Is(err, context.Canceled) && !isInterrupted(err) {
				t.Fatalf("round %d: cancelled at row %d: %v", round, at, err)
			}
		} else {
			injected := errors.New("injected read failure")
			hk.scanRow.Store(ptr(func(n int64) error {
				if n >= at {
					return injected
				}
				return nil
			}))
			err = ix.Rebuild(context.Background())
			hk.scanRow.Store(nil)
			if !errors.Is(err, injected) {
				t.Fatalf("round %d: failed at row %d: %v", round, at, err)
			}
		}
		st := ix.Stats()
		if !st.Serving || st.Rebuilding || !errors.Is(st.LastError, err) {
			t.Fatalf("round %d: after failed rebuild: serving %v rebuilding %v last error %v", round, st.Serving, st.Rebuilding, st.LastError)
		}
		expect(t, ix, fetched, probe)
	}
	after, _ := os.ReadFile(cfg.Snapshot)
	if !slices.Equal(before, after) {
		t.Fatal("failed rebuilds changed the snapshot file")
	}
	if err := ix.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	expect(t, ix, fetched, probe)
}

// TestSaveFailureKeepsServing: the disk refuses the snapshot. The rebuilt
// filter is complete, so it serves; the error is reported; the old file
// is untouched.
func TestSaveFailureKeepsServing(t *testing.T) {
	seed := ids("seed", 1000)
	path := appDB(t, seed...)
	cfg := appConfig(path)
	dir := filepath.Join(t.TempDir(), "snap")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg.Snapshot = filepath.Join(dir, "f.sfb")
	ix := open(t, cfg)
	before, err := os.ReadFile(cfg.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	// Replace the directory by a file: creating the temp file fails (as a
	// full disk would), even for root.
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	insertIDs(t, rawDB(t, path), "new-1")
	err = ix.Rebuild(context.Background())
	if err == nil {
		t.Fatal("Rebuild succeeded without a snapshot directory")
	}
	if st := ix.Stats(); !st.Serving || st.LastError == nil {
		t.Fatalf("after failed save: %+v", st)
	}
	expect(t, ix, set(seed, []string{"new-1"}), append(slices.Clone(seed[:100]), "new-1", "never"))
	_ = os.Remove(dir)
	if err := os.Rename(dir+".away", dir); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(cfg.Snapshot)
	if !slices.Equal(before, after) {
		t.Fatal("snapshot changed by a failed save")
	}
}

// TestReloadPicksUpAnotherWritersSnapshot: a cron-like second index writes
// the snapshot file; the running one reloads it and catches up.
func TestReloadPicksUpAnotherWritersSnapshot(t *testing.T) {
	path := appDB(t, ids("seed", 1000)...)
	cfg := appConfig(path)
	app := open(t, cfg)
	db := rawDB(t, path)
	insertIDs(t, db, ids("cron", 500)...)
	cron := open(t, cfg)
	if err := cron.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	insertIDs(t, db, ids("after", 200)...)
	if err := app.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := app.Stats()
	if !st.Serving || st.Capacity < 3000 {
		t.Fatalf("after reload: %+v", st)
	}
	probe := append(append(ids("seed", 1000), ids("cron", 500)...), append(ids("after", 200), ids("never", 300)...)...)
	expect(t, app, set(ids("seed", 1000), ids("cron", 500), ids("after", 200)), probe)
	// A damaged file is refused and the running filter stays.
	raw, _ := os.ReadFile(cfg.Snapshot)
	raw[300] ^= 1
	_ = os.WriteFile(cfg.Snapshot, raw, 0o600)
	if err := app.Reload(context.Background()); !errors.Is(err, snapshot.ErrChecksum) {
		t.Fatalf("Reload of a damaged file: %v", err)
	}
	if !app.Stats().Serving {
		t.Fatal("refused reload left no filter serving")
	}
	expect(t, app, set(ids("seed", 1000), ids("cron", 500), ids("after", 200)), probe)
}

// TestBuildSnapshotForCron: the cron entry point writes a snapshot an app
// then opens and trusts, including rows written after the job.
func TestBuildSnapshotForCron(t *testing.T) {
	seed := ids("seed", 20000)
	path := appDB(t, seed...)
	cfg := appConfig(path)
	var calls atomic.Int64
	var last atomic.Pointer[[2]int64]
	cfg.Progress = func(done, total int64) { calls.Add(1); last.Store(&[2]int64{done, total}) }
	cfg.ProgressEvery = 1000 // keys are read in chunks of thousands: a call per chunk
	rep, err := BuildSnapshot(context.Background(), cfg.DBConfig, cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	// Progress runs beside the scan and may skip values, never the last.
	if l := last.Load(); rep.Rows != 20000 || rep.Bytes <= 0 || rep.M == 0 || rep.Capacity < 40000 || calls.Load() < 1 || l == nil || *l != [2]int64{20000, 20000} {
		t.Fatalf("report %+v, %d progress calls, the last %v", rep, calls.Load(), l)
	}
	insertIDs(t, rawDB(t, path), "after-job")
	ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: cfg.Snapshot, AutoRebuild: AutoRebuild{Off: true}}})
	if st := ix.Stats(); !st.Serving || st.SnapshotError != nil {
		t.Fatalf("app did not use the job's snapshot: %+v", st)
	}
	expect(t, ix, set(seed, []string{"after-job"}), append(slices.Clone(seed[:100]), "after-job", "never"))
	if _, err := BuildSnapshot(context.Background(), DBConfig{Path: path, Driver: testdriver.Driver()}, Source{Table: "records", Column: "id"}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("no snapshot path: %v", err)
	}
}

// TestFirstOpenWithUnwritableSnapshot: the first scan succeeds but the
// snapshot cannot be written. The index serves; the error is reported.
func TestFirstOpenWithUnwritableSnapshot(t *testing.T) {
	path := appDB(t, ids("seed", 200)...)
	cfg := appConfig(path)
	cfg.Snapshot = filepath.Join(t.TempDir(), "no-such-dir", "f.sfb")
	ix := open(t, cfg)
	st := ix.Stats()
	if !st.Serving || st.LastError == nil || !errors.Is(st.LastError, os.ErrNotExist) {
		t.Fatalf("serving %v, last error %v", st.Serving, st.LastError)
	}
	expect(t, ix, set(ids("seed", 200)), append(ids("seed", 200)[:50], "never"))
}

// TestScanRecordCoversOnlyTheScan: the database records the spellings
// table complete up to the scan's head, not up to where calls caught the
// published filter up before the record was written: an id stored in
// NFD after the scan's head, taken in by a call in that moment, is found
// by an NFC query of the next open, which builds its spellings from the
// record and the log after it.
func TestScanRecordCoversOnlyTheScan(t *testing.T) {
	ctx := context.Background()
	path := appDB(t, ids("seed", 100)...)
	app := rawDB(t, path)
	nfd, nfc := "cafe\u0301-late", "caf\u00e9-late"
	cfg, _ := hooked(appConfig(path))
	var ix atomic.Pointer[Index]
	cfg.knobs.published = func() {
		if ix.Load() == nil {
			return
		}
		// Between the publication and the record: the app stores an id
		// in NFD, and a call about ASCII ids (which needs no spellings)
		// catches the new filter up past the scan's head.
		insertIDs(t, app, nfd)
		if missing, err := ix.Load().Missing(ctx, []string{"never-ascii"}); err != nil || !missing[0] {
			t.Errorf("Missing(never-ascii): %v, %v", missing, err)
		}
	}
	first := open(t, cfg)
	ix.Store(first)
	if err := first.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	ix.Store(nil)
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	again := open(t, cfg)
	for _, k := range []string{nfc, nfd} {
		if ok, err := again.Fetched(ctx, k); err != nil || !ok {
			t.Fatalf("after reopen, Fetched(%q) = %v, %v: want true", k, ok, err)
		}
	}
}

// TestFailedFirstScanIsTriedAgain: the first scan of a source this open
// attached fails (as when SQLite reports the database locked while the
// app writes without pause): the attach is undone, calls are answered
// exactly from SQLite, and, as the app keeps calling, the index attaches
// the source again and scans it after a wait that doubles with each
// failure, until a filter serves. Never "detached": the app did not
// detach anything.
func TestFailedFirstScanIsTriedAgain(t *testing.T) {
	ctx := context.Background()
	seed := ids("seed", 300)
	path := appDB(t, seed...)
	cfg, hk := hooked(appConfig(path))
	cfg.knobs.retryFirst = 20 * time.Millisecond
	var scans atomic.Int32
	fail := func(n int64) error {
		if n == 0 && scans.Add(1) <= 3 {
			return errors.New("database is locked")
		}
		return nil
	}
	hk.scanRow.Store(&fail)
	ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close(ctx) })
	probe := append(seed[:30:30], ids("never", 30)...)
	want := set(seed)
	deadline := time.Now().Add(callBound)
	for !ix.Stats().Serving {
		if time.Now().After(deadline) {
			st := ix.Stats()
			t.Fatalf("no filter after %d scans: attached %v, upkeep %q, last error %v", scans.Load(), st.Attached, st.Upkeep, st.LastError)
		}
		if err := ix.Stats().LastError; err != nil && strings.Contains(err.Error(), "detached") {
			t.Fatalf("a failed first scan reported as a detach: %v", err)
		}
		expect(t, ix, want, probe)
		time.Sleep(10 * time.Millisecond)
	}
	if n := scans.Load(); n != 4 {
		t.Fatalf("%d scans, want 3 failed and one that served", n)
	}
	if st := ix.Stats(); !st.Attached {
		t.Fatalf("serving but not attached: %+v", st)
	}
	insertIDs(t, rawDB(t, path), "after-0")
	want["after-0"] = true
	expect(t, ix, want, append(probe, "after-0"))
}
