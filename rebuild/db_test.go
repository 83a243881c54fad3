package rebuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// TestCollectionsShareTheDatabase: ten collections of one database cost
// at most 8 SQLite connections and 6 goroutines more than one (counted,
// not timed): they share the writer, the readers, the filters' writer
// goroutine and the worker.
func TestCollectionsShareTheDatabase(t *testing.T) {
	// Not parallel: counts the process's goroutines.
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
	if readers := min(4, max(2, runtime.GOMAXPROCS(0))); c10 > readers+5 {
		t.Fatalf("%d connections for the database: more than the readers, the writer, a scan, its count, a spellings scan and the data-version reader", c10)
	}
}

// TestMissingDatabaseIsNotCreated: a mistyped path for an app's table is
// an error, and leaves no empty database behind.
func TestMissingDatabaseIsNotCreated(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "typo.db")
	_, err := Open(context.Background(), DBConfig{Path: path, Driver: testdriver.Driver()}, Source{Table: "records", Column: "id"})
	if !errors.Is(err, ErrNoSource) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open = %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("Open created %s", path)
	}
}

// TestFailedOwnTableOpenLeavesNoDatabase: an Open of the library's own
// table that starts a new database file and then fails (here, its first
// scan) removes the file it created.
func TestFailedOwnTableOpenLeavesNoDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "new.db")
	injected := errors.New("injected scan failure")
	dcfg := DBConfig{Path: path, Driver: testdriver.Driver(), knobs: knobs{scanRow: func(int64) error { return injected }}}
	ix, err := Open(context.Background(), dcfg, Source{Snapshot: filepath.Join(dir, "new.sfb")})
	if err == nil { // the first scan runs in the background
		err = ix.Wait(context.Background())
		_ = ix.Close(context.Background())
	}
	if !errors.Is(err, injected) {
		t.Fatalf("Open = %v, want the injected failure", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("a failed Open left %v", entries)
	}
}
