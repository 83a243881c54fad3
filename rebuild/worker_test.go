package rebuild

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// TestIndexLoadsItsSnapshotAfterOpen: DB.Index returns before its snapshot
// is loaded; the first call (or the worker, whichever comes first) loads
// it, every answer is exact meanwhile, Wait waits for it, and a snapshot
// that cannot be used is reported and rebuilt from as at rebuild.Open.
func TestIndexLoadsItsSnapshotAfterOpen(t *testing.T) {
	t.Parallel()
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
		st := stats(ix)
		switch {
		case i < 3 && (st.SnapshotError != nil || st.Rebuilds != 0 || !st.Serving):
			t.Fatalf("collection %d: serving %v, %d rebuilds, snapshot error %v: the snapshot was not used", i, st.Serving, st.Rebuilds, st.SnapshotError)
		case i == 3 && (st.SnapshotError == nil || !st.Serving):
			t.Fatalf("damaged snapshot: serving %v, snapshot error %v", st.Serving, st.SnapshotError)
		}
	}
}

// TestLoadWaitsForTheFirstCall: an index opened with its snapshot file
// there loads it once the app's first call is answered (or the app waits
// for it), not before: the first answer, from SQLite, does not share the
// machine with the load, and an index opened and never asked loads
// nothing.
func TestLoadWaitsForTheFirstCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 2000)...)
	cfg := appConfig(path)
	warm := open(t, cfg) // the first scan, and the snapshot saved at Close
	if err := warm.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, first := range []string{"Missing", "Wait"} {
		ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		if st := stats(ix); st.Serving || st.Upkeep != "load" {
			t.Fatalf("before any call: serving %v, upkeep %q; want the load asked, not run", st.Serving, st.Upkeep)
		}
		switch first {
		case "Missing":
			got, err := missingList(ctx, ix, append(ids("seed", 10), "never"))
			if err != nil || len(got) != 1 || got[0] != "never" {
				t.Fatalf("the first call, before the load: %q, %v", got, err)
			}
			deadline := time.Now().Add(callBound)
			for !stats(ix).Serving {
				if time.Now().After(deadline) {
					t.Fatal("no filter serving after the first call")
				}
				time.Sleep(time.Millisecond)
			}
		case "Wait":
			if err := ix.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if !stats(ix).Serving {
				t.Fatal("no filter serving after Wait")
			}
		}
		if err := ix.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
