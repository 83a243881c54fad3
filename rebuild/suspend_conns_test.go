package rebuild

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// TestSuspendHoldsNoConnection: once Suspend returns, the library holds
// no descriptor of the database's files (so no SQLite lock) and starts
// nothing: a rebuild in progress is interrupted and waits for Resume.
// Calls meanwhile are answered exactly, each closing what it opened
// before it returns, on a source with a log and on one without (whose
// PRAGMA data_version connection is closed again too). After Resume the
// interrupted rebuild runs and the filter serves.
func TestSuspendHoldsNoConnection(t *testing.T) {
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
	ix, err := db.Index(ctx, cfg.Source) // attaches, and asks the worker for the first scan
	if err != nil {
		t.Fatal(err)
	}
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
	if st := ix.Stats(); st.Serving || !strings.Contains(st.Upkeep, "rebuild") {
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
	time.Sleep(50 * time.Millisecond) // nothing starts meanwhile
	if _, open := openFiles(t, path); open > 0 {
		t.Fatalf("after calls while suspended the process holds %d descriptors of the database's files", open)
	}
	if ix.Stats().Serving {
		t.Fatal("a filter was built while suspended")
	}

	db.Resume()
	ro.Resume()
	h.scanRow.Store(nil)
	waitServing(t, ix)
	expect(t, ix, set(seed, []string{"while-suspended"}), probe)
}
