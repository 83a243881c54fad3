package rebuild

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// TestConcurrentMarkQueryRebuild runs markers, askers and rebuilds at once
// (meant for -race) against an exact reference. A key's state goes from 0
// (never marked) to 1 (being marked) to 2 (MarkFetched returned). An
// answer is checked against the state before and after it: committed
// before → must be fetched; still unmarked after → must be missing.
func TestConcurrentMarkQueryRebuild(t *testing.T) {
	t.Parallel()
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
	t.Logf("%d rebuilds while marking; stats %+v", rebuilds, stats(ix))
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
	t.Parallel()
	seed := ids("seed", 30000)
	path := appDB(t, seed...)
	cfg, hk := hooked(appConfig(path))
	cfg.knobs.store.ScanChunk = 500 // a Progress call with every chunk
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
		at := 1 + r.Int64N(29000) // two chunks at least after it
		var err error
		if round%2 == 0 {
			ctx, c := context.WithCancel(context.Background())
			cancel.Store(&c)
			cancelAt.Store(at)
			// Progress is called from a goroutine of its own, which a
			// busy machine may run late: the scan reads on, a chunk
			// after the one reported, only once the app has cancelled
			// (else the scan could end first and the rebuild succeed).
			hk.scanRow.Store(ptr(func(n int64) error {
				if n >= at+500 {
					select {
					case <-ctx.Done():
					case <-time.After(time.Minute):
						return errors.New("Progress was never called past the cancelling row")
					}
				}
				return nil
			}))
			err = ix.Rebuild(ctx)
			hk.scanRow.Store(nil)
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
		st := stats(ix)
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

// TestCollectionsRebuildInTurn: rebuilds of different collections never
// run at the same time, and one collection's rebuild leaves the others
// serving.
func TestCollectionsRebuildInTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := collectionsDB(t, 3, 3000)
	var mu sync.Mutex
	active, peak := 0, 0
	var others atomic.Bool // another collection was caught in bypass during a scan
	var ixs atomic.Pointer[[]*Index]
	// The scans report to the database's hook from their own goroutines,
	// at their start (n = 0) and with every chunk (500 keys, up to the
	// 3,000 each collection holds).
	scanRow := func(n int64) error {
		mu.Lock()
		switch {
		case n == 0:
			active++
			peak = max(peak, active)
		case n >= 3000:
			active--
		}
		mu.Unlock()
		time.Sleep(time.Millisecond) // widen the window
		if list := ixs.Load(); list != nil {
			for _, ix := range *list {
				if st := stats(ix); !st.Serving && !st.Rebuilding {
					others.Store(true)
				}
			}
		}
		return nil
	}
	db, err := OpenDB(ctx, DBConfig{Path: path, Driver: testdriver.Driver(), knobs: knobs{store: store.Knobs{ScanChunk: 500}, scanRow: scanRow}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	var list []*Index
	for i := range 3 {
		ix, err := db.Index(ctx, Source{Table: fmt.Sprintf("coll%d", i), Column: "id"})
		if err != nil {
			t.Fatal(err)
		}
		if err := ix.Wait(ctx); err != nil { // built (no snapshot): none in bypass from now on
			t.Fatal(err)
		}
		list = append(list, ix)
	}
	ixs.Store(&list)
	var wg sync.WaitGroup
	for _, ix := range list {
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := ix.Rebuild(ctx); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	if peak != 1 {
		t.Fatalf("%d scans at once, want one at a time", peak)
	}
	if others.Load() {
		t.Fatal("a collection was in bypass while another rebuilt")
	}
	for i, ix := range list {
		expect(t, ix, set(ids(fmt.Sprintf("c%d", i), 3000)), append(ids(fmt.Sprintf("c%d", i), 50), ids("never", 50)...))
	}
}

// TestAnAbandonedRebuildLeavesTheBackgroundsJob: the app's Rebuild takes
// the place of the background's queued one (a first scan) while another
// collection's scan holds the worker, and its context ends before it
// starts: the background's rebuild is still done, and the filter serves.
func TestAnAbandonedRebuildLeavesTheBackgroundsJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := modeDB(t, "wal", []string{"records", "others"}, ids("seed", 500)...)
	hk := &hooks{}
	entered, release := scanGate(t, hk)
	db, err := OpenDB(ctx, DBConfig{Path: path, Driver: testdriver.Driver(), knobs: hk.knobsOf(knobs{})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close(ctx) })
	t.Cleanup(release)
	records, err := db.Index(ctx, Source{Table: "records", Column: "id", Snapshot: path + ".records.sfb"})
	if err != nil {
		t.Fatal(err)
	}
	firstCall(t, records) // the first scans start after a call
	waitClosed(t, entered, "the first scan of records")
	other, err := db.Index(ctx, Source{Table: "others", Column: "id", Snapshot: path + ".others.sfb"})
	if err != nil {
		t.Fatal(err)
	}
	firstCall(t, other)
	waitFor(t, "the first scan of others queued", func() bool { return other.k.Upkeep() == "rebuild" })
	rctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := other.Rebuild(rctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Rebuild while the worker is held = %v, want its context's error", err)
	}
	release()
	if err := other.Wait(ctx); err != nil {
		t.Fatalf("Wait after the abandoned Rebuild = %v, want the background's rebuild done", err)
	}
	judgePage(t, other, storedCanon(t, path, "others"), append(ids("seed", 20), ids("never", 20)...), true, "after the background's rebuild")
}
