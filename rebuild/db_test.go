package rebuild

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// TestCollectionsShareTheDatabase: ten collections of one database cost
// at most 8 SQLite connections and 6 goroutines more than one (counted,
// not timed): they share the writer, the readers, the filters' writer
// goroutine and the worker.
func TestCollectionsShareTheDatabase(t *testing.T) {
	ctx := context.Background()
	path := collectionsDB(t, 10, 200)
	measure := func(n int) (conns, files, gs int) {
		base := goroutines()
		db, err := OpenDB(ctx, DBConfig{Path: path, Driver: testdriver.Driver()})
		if err != nil {
			t.Fatal(err)
		}
		var ixs []*Index
		for i := range n {
			ix, err := db.Index(ctx, Source{Table: fmt.Sprintf("coll%d", i), Column: "id", Snapshot: fmt.Sprintf("%s.%d.sfb", path, i)})
			if err != nil {
				t.Fatal(err)
			}
			ixs = append(ixs, ix)
		}
		var wg sync.WaitGroup
		for _, ix := range ixs { // every collection busy at once: the pool opens what it may
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 20 {
						if _, err := missingList(ctx, ix, ids("c", 50)); err != nil {
							t.Error(err)
						}
					}
				}()
			}
		}
		wg.Wait()
		conns, files = openFiles(t, path)
		gs = goroutines() - base
		if err := db.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if c, _ := openFiles(t, path); c != 0 {
			t.Fatalf("%d connections left after Close", c)
		}
		return conns, files, gs
	}
	c1, f1, g1 := measure(1)
	c10, f10, g10 := measure(10)
	t.Logf("one collection: %d connections (%d files), %d goroutines; ten: %d (%d), %d", c1, f1, g1, c10, f10, g10)
	if c10-c1 > 8 {
		t.Fatalf("ten collections hold %d connections, one %d: more than 8 more", c10, c1)
	}
	if g10-g1 > 6 {
		t.Fatalf("ten collections run %d goroutines, one %d: more than 6 more", g10, g1)
	}
	if readers := min(4, max(2, runtime.GOMAXPROCS(0))); c10 > readers+4 {
		t.Fatalf("%d connections for the database: more than the readers, the writer, a scan, its count and the data-version reader", c10)
	}
}

// TestCollectionsRebuildInTurn: rebuilds of different collections never
// run at the same time, and one collection's rebuild leaves the others
// serving.
func TestCollectionsRebuildInTurn(t *testing.T) {
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
				if st := ix.Stats(); !st.Serving && !st.Rebuilding {
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

// TestIndexLoadsItsSnapshotAfterOpen: DB.Index returns before its snapshot
// is loaded; the first call (or the worker, whichever comes first) loads
// it, every answer is exact meanwhile, Wait waits for it, and a snapshot
// that cannot be used is reported and rebuilt from as at rebuild.Open.
func TestIndexLoadsItsSnapshotAfterOpen(t *testing.T) {
	ctx := context.Background()
	path := collectionsDB(t, 4, 2000)
	src := func(i int) Source {
		return Source{Table: fmt.Sprintf("coll%d", i), Column: "id", Snapshot: fmt.Sprintf("%s.%d.sfb", path, i)}
	}
	db, err := OpenDB(ctx, DBConfig{Path: path, Driver: testdriver.Driver()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 { // attach and save every snapshot
		ix, err := db.Index(ctx, src(i))
		if err != nil {
			t.Fatal(err)
		}
		if err := ix.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src(3).Snapshot, []byte("damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	db, err = OpenDB(ctx, DBConfig{Path: path, Driver: testdriver.Driver()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	var ixs []*Index
	for i := range 4 {
		ix, err := db.Index(ctx, src(i))
		if err != nil {
			t.Fatal(err)
		}
		ixs = append(ixs, ix)
	}
	var wg sync.WaitGroup
	for i, ix := range ixs { // first calls racing the worker's loads
		wg.Add(1)
		go func() {
			defer wg.Done()
			expect(t, ix, set(ids(fmt.Sprintf("c%d", i), 2000)), append(ids(fmt.Sprintf("c%d", i), 30), ids("never", 30)...))
		}()
	}
	wg.Wait()
	for i, ix := range ixs {
		if err := ix.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		st := ix.Stats()
		switch {
		case i < 3 && (st.SnapshotError != nil || st.Rebuilds != 0 || !st.Serving):
			t.Fatalf("collection %d: serving %v, %d rebuilds, snapshot error %v: the snapshot was not used", i, st.Serving, st.Rebuilds, st.SnapshotError)
		case i == 3 && (st.SnapshotError == nil || !st.Serving):
			t.Fatalf("damaged snapshot: serving %v, snapshot error %v", st.Serving, st.SnapshotError)
		}
	}
}
