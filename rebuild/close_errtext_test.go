package rebuild

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// TestCloseErrorNamesEachCauseOnce: Close with a context of a
// millisecond while a rebuild scans (held in its scan) returns the
// context's error, whose text says "context deadline exceeded" once,
// however many waits ran out of that context: the index's, the
// database's, several collections'. The rebuild then stops, and the
// closing finishes without the caller.
func TestCloseErrorNamesEachCauseOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		db      bool // OpenDB with two collections, DB.Close; else rebuild.Open, Index.Close
		worker  bool // the worker's first scan; else the app's Rebuild
		closeIx bool // Index.Close of one collection of the DB
	}{
		{name: "Open, the app's Rebuild"},
		{name: "Open, the worker's first scan", worker: true},
		{name: "DB.Close, the app's Rebuild", db: true},
		{name: "DB.Close, the worker's first scan", db: true, worker: true},
		{name: "DB.Index Close, the app's Rebuild", db: true, closeIx: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := modeDB(t, "wal", []string{"records", "others"}, ids("seed", 500)...)
			if !tc.worker {
				for _, table := range []string{"records", "others"} { // attached and scanned before
					ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: table, Column: "id", Snapshot: path + "." + table + ".sfb"}})
					if err := ix.Close(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			baseline := baselineGoroutines()
			hk := &hooks{}
			dcfg := DBConfig{Path: path, Driver: testdriver.Driver(), knobs: hk.knobsOf(knobs{})}
			entered, release := scanGate(t, hk)
			src := func(table string) Source {
				return Source{Table: table, Column: "id", Snapshot: path + "." + table + ".sfb"}
			}
			var ix *Index
			var db *DB
			var err error
			if tc.db {
				if db, err = OpenDB(ctx, dcfg); err != nil {
					t.Fatal(err)
				}
				if ix, err = db.Index(ctx, src("records")); err != nil {
					t.Fatal(err)
				}
				if _, err = db.Index(ctx, src("others")); err != nil {
					t.Fatal(err)
				}
			} else if ix, err = Open(ctx, dcfg, src("records")); err != nil {
				t.Fatal(err)
			}
			rebuilt := make(chan error, 1)
			if !tc.worker {
				go func() { rebuilt <- ix.Rebuild(ctx) }()
			}
			waitClosed(t, entered, "the scan")
			cctx, cancel := context.WithTimeout(ctx, time.Millisecond)
			defer cancel()
			switch {
			case tc.closeIx:
				causesOnce(t, "Index.Close", ix.Close(cctx))
			case tc.db:
				causesOnce(t, "DB.Close", db.Close(cctx))
			default:
				causesOnce(t, "Close", ix.Close(cctx))
			}
			release()
			if !tc.worker {
				if err := <-rebuilt; err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, context.Canceled) {
					t.Fatalf("the Rebuild that Close stopped = %v", err)
				}
			}
			if tc.closeIx {
				if err := db.Close(ctx); err != nil {
					t.Fatal(err)
				}
			}
			goroutinesBackTo(t, baseline)
		})
	}
}
