package rebuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// batchKeys is how many stored spellings a scan gathers before it
// writes them.
const batchKeys = 4096

// TestRebuildSizesFromTheRowsRead: a rebuild sizes the filter for the rows
// of the source (NULL and BLOB ids included), from the count that starts
// it (which may see a row committed just after the read began). A row
// committed by another connection during the scan is found through the
// log.
func TestRebuildSizesFromTheRowsRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stored := ids("stored", 1000)
	path := appDB(t, stored...)
	db := rawDB(t, path)
	defer db.Close()
	for i := range 7 {
		mustExec(t, db, `INSERT INTO records (id, body) VALUES (NULL, ?)`, i)
	}
	for i := range 5 {
		mustExec(t, db, `INSERT INTO records (id, body) VALUES (?, 'blob')`, []byte(fmt.Sprint("blob", i)))
	}
	cfg, hk := hooked(appConfig(path))
	cfg.Headroom = 3
	ix := open(t, cfg)
	var once sync.Once
	hk.scanRow.Store(ptr(func(n int64) error {
		once.Do(func() { mustExec(t, db, `INSERT INTO records (id, body) VALUES ('late', '')`) })
		return nil
	}))
	if err := ix.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	hk.scanRow.Store(nil)
	st := stats(ix)
	if c := st.Capacity; c != 3*1012 && c != 3*1013 {
		t.Fatalf("capacity %d, want 3 × 1,012 rows (or 1,013 if the count saw the late row)", c)
	}
	probe := append(append([]string{"late"}, stored...), ids("never", 200)...)
	missing, err := missingList(ctx, ix, probe)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) != 200 || missing[0] != "never-0000000" {
		t.Fatalf("%d missing (first %q), want the 200 never stored", len(missing), missing[0])
	}
}

// TestFailedRebuildLeavesTheAppAlone: a rebuild that fails in its new
// steps (the count beside the scan, a chunk of keys cut off mid-read)
// returns the error and leaves the app's database and files as they
// were: sqlite_master byte for byte, the snapshot file unchanged, the app
// still able to INSERT, and the previous filter answering.
func TestFailedRebuildLeavesTheAppAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stored := ids("stored", 2*batchKeys)
	path := appDB(t, stored...)
	cfg, hk := hooked(appConfig(path))
	ix := open(t, cfg)
	if err := ix.Rebuild(ctx); err != nil { // writes the snapshot
		t.Fatal(err)
	}
	before, snap := schema(t, path), fileSum(t, appConfig(path).Snapshot)
	injected := errors.New("injected failure")
	for _, tc := range []struct {
		name string
		set  func()
	}{
		{"count fails", func() { hk.beforeCount.Store(ptr(func() error { return injected })) }},
		{"read fails inside a chunk", func() {
			hk.scanRow.Store(ptr(func(n int64) error {
				if n > batchKeys {
					return injected
				}
				return nil
			}))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.set()
			err := ix.Rebuild(ctx)
			hk.beforeCount.Store(nil)
			hk.scanRow.Store(nil)
			if !errors.Is(err, injected) {
				t.Fatalf("rebuild: %v, want the injected failure", err)
			}
			if !bytes.Equal(schema(t, path), before) {
				t.Fatal("sqlite_master changed")
			}
			if fileSum(t, appConfig(path).Snapshot) != snap {
				t.Fatal("the snapshot file changed")
			}
			if !stats(ix).Serving {
				t.Fatal("the previous filter no longer answers")
			}
			mustExec(t, plainDB(t, path), `INSERT INTO records (id, body) VALUES (?, 'x')`, "after-"+tc.name)
			missing, err := missingList(ctx, ix, append([]string{"after-" + tc.name, "never"}, stored...))
			if err != nil || len(missing) != 1 || missing[0] != "never" {
				t.Fatalf("missing %q, %v; want only the never-stored id", missing, err)
			}
		})
	}
}

// TestScanRecordCoversOnlyTheScan: the database records the spellings
// table complete up to the scan's head, not up to where calls caught the
// published filter up before the record was written: an id stored in
// NFD after the scan's head, taken in by a call in that moment, is found
// by an NFC query of the next open, which builds its spellings from the
// record and the log after it.
func TestScanRecordCoversOnlyTheScan(t *testing.T) {
	t.Parallel()
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

// TestFirstOpenScansOnce: the first open of a table that holds rows (never
// attached) scans it once in the background, however the worker's start
// and the open's own look at the source interleave: one rebuild, and
// Progress never starts counting again.
func TestFirstOpenScansOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for round := range 5 {
		path := appDB(t, ids(fmt.Sprint("seed", round), 20000)...)
		cfg := appConfig(path)
		var last, restarts atomic.Int64
		cfg.ProgressEvery = 1000
		cfg.Progress = func(done, total int64) {
			if done < last.Swap(done) {
				restarts.Add(1)
			}
		}
		ix := open(t, cfg)
		if err := ix.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if st := stats(ix); st.Rebuilds != 1 || restarts.Load() != 0 {
			t.Fatalf("round %d: %d rebuilds, Progress counted again from the start %d times; want 1 and 0", round, st.Rebuilds, restarts.Load())
		}
	}
}

// TestScanOutlastsTheAppsWriteLock: the app holds the write lock past
// the library's busy timeout while a rebuild's scan would write the
// stored spellings it found: the scan keeps them and goes on, and once
// the lock is free the rebuild completes with every spelling recorded.
func TestScanOutlastsTheAppsWriteLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var nfd []string
	for i := range 5000 {
		nfd = append(nfd, fmt.Sprintf("cafe\u0301-%05d", i)) // stored in NFD: each a spelling to record
	}
	path := appDB(t, nfd...)
	app := rawDB(t, path)
	lock, err := app.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	var held, released atomic.Bool
	cfg := config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver(), BusyTimeout: 20 * time.Millisecond, knobs: knobs{
		store: store.Knobs{ScanChunk: 256},
		scanRow: func(n int64) error {
			switch {
			case n > 0 && n < 4096 && !held.Load(): // before the first batch of spellings is written
				held.Store(true)
				_, err := lock.ExecContext(ctx, `BEGIN IMMEDIATE`)
				return err
			case n > 4096+512 && held.Load() && !released.Load(): // that batch met the lock
				released.Store(true)
				_, err := lock.ExecContext(ctx, `COMMIT`)
				return err
			}
			return nil
		},
	}}, Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb"}}
	ix := open(t, cfg)
	if err := ix.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if !released.Load() {
		t.Fatal("the scan never held the lock through a batch of spellings")
	}
	if st := stats(ix); !st.Serving || st.Rebuilds == 0 {
		t.Fatalf("no filter serves after the scan: %+v", st)
	}
	var n int
	if err := app.QueryRow(`SELECT count(*) FROM syncfilter_spellings_1`).Scan(&n); err != nil || n != len(nfd) {
		t.Fatalf("%d spellings recorded (%v), want %d", n, err, len(nfd))
	}
	expect(t, ix, set(nfd), slices.Concat(nfd[:20], []string{"café-99999"}))
}
