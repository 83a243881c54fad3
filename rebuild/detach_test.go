package rebuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"golang.org/x/text/unicode/norm"
)

// TestDetachRestoresTheSchema: after Detach, sqlite_master is exactly
// what it was before the first attach, and the app's writes work.
func TestDetachRestoresTheSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := guestDB(t)
	app := rawDB(t, path)
	mustExec(t, app, `CREATE TABLE messages (server_id TEXT PRIMARY KEY)`)
	pristine := schema(t, path)

	// Two sources, rows, a rebuild, stored spellings and a compacted log.
	for _, c := range []config{
		{DBConfig{Path: path, Driver: testdriver.Driver()}, Source{Table: "records", Column: "id", Snapshot: path + ".sfb", LogRetain: 1}},
		{DBConfig{Path: path, Driver: testdriver.Driver()}, Source{Table: "Messages", Column: "Server_ID"}},
	} {
		ix := open(t, c)
		insertIDs(t, app, norm.NFD.String("Ünïcode-"+c.Table), "plain-"+c.Table)
		if err := ix.Rebuild(ctx); err != nil {
			t.Fatal(err)
		}
		if err := ix.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if bytes.Equal(schema(t, path), pristine) {
		t.Fatal("attach changed nothing?")
	}
	if err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "RECORDS", "ID"); err != nil {
		t.Fatal(err)
	}
	if err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "id"); !errors.Is(err, ErrNotAttached) {
		t.Fatalf("second Detach = %v, want ErrNotAttached", err)
	}
	var names []string
	rows, err := app.Query(`SELECT name FROM sqlite_master WHERE name LIKE 'syncfilter%' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		_ = rows.Scan(&n)
		names = append(names, n)
	}
	rows.Close()
	// The other source keeps its log, spellings table, triggers and the
	// shared tables.
	if want := "[syncfilter_ins_2 syncfilter_log_2 syncfilter_scans syncfilter_snapshots syncfilter_sources syncfilter_spellings_2 syncfilter_upd_2]"; fmt.Sprint(names) != want {
		t.Fatalf("after detaching one of two sources: %v, want %s", names, want)
	}
	if err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "messages", "server_id"); err != nil {
		t.Fatal(err)
	}
	if after := schema(t, path); !bytes.Equal(pristine, after) {
		t.Fatalf("Detach left the schema different:\nbefore %s\nafter  %s", pristine, after)
	}
	mustExec(t, app, `INSERT INTO records (id) VALUES ('after-detach')`)
	mustExec(t, app, `INSERT INTO messages (server_id) VALUES ('after-detach')`)
	if err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "bad name"); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("Detach with a bad name = %v", err)
	}
}

// TestDetachOwnTable removes the library's own table with the rest.
func TestDetachOwnTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "own.db")
	app := rawDB(t, path)
	mustExec(t, app, `CREATE TABLE app_data (x)`)
	pristine := schema(t, path)
	ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{}})
	if err := ix.MarkFetched(ctx, "a", "b"); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "", ""); err != nil {
		t.Fatal(err)
	}
	if after := schema(t, path); !bytes.Equal(pristine, after) {
		t.Fatalf("schema after Detach:\n%s", after)
	}
}

// TestDetachUnderAnOpenIndex: Detach while an index has the source open
// runs (an open index holds nothing in the database): the schema is as
// before the first attach. The index notices at its next call, answers
// exactly from SQLite, rows written after the detach included, and does
// not attach the source again by itself; a new open does.
func TestDetachUnderAnOpenIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 100)...)
	pristine := schema(t, path)
	ix := open(t, appConfig(path))
	if err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "id"); err != nil {
		t.Fatalf("Detach while an index is open = %v", err)
	}
	if !bytes.Equal(schema(t, path), pristine) {
		t.Fatal("the schema after Detach is not the one before the first attach")
	}
	insertIDs(t, rawDB(t, path), "after-detach")
	expect(t, ix, set(ids("seed", 100), []string{"after-detach"}), []string{"seed-0000001", "after-detach", "never"})
	if err := ix.Wait(ctx); !errors.Is(err, ErrNotServing) {
		t.Fatalf("Wait after the detach = %v, want ErrNotServing", err)
	}
	if st := stats(ix); st.Serving || st.Attached {
		t.Fatalf("after the detach: serving %v, attached %v", st.Serving, st.Attached)
	}
	if !bytes.Equal(schema(t, path), pristine) {
		t.Fatal("the index attached the source again by itself")
	}
	again := open(t, appConfig(path))
	expect(t, again, set(ids("seed", 100), []string{"after-detach"}), []string{"after-detach", "never"})
	if st := stats(again); !st.Serving || !st.Attached {
		t.Fatalf("a new open: serving %v, attached %v", st.Serving, st.Attached)
	}
}

// TestDetachRefusesDuringAScan: while a rebuild scans the source (here
// one in this process; its lease is a row any process sees), Detach
// refuses with ErrHeld naming the scan and changes nothing; Force
// detaches, and the rebuild fails without leaving anything behind.
func TestDetachRefusesDuringAScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 20000)...)
	pristine := schema(t, path)
	cfg, hk := hooked(appConfig(path))
	cfg.knobs.store.ScanChunk = 1000
	ix := open(t, cfg)
	inside, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hk.scanRow.Store(ptr(func(n int64) error {
		if n > 0 {
			once.Do(func() { close(inside); <-release })
		}
		return nil
	}))
	rebuilt := make(chan error, 1)
	go func() { rebuilt <- ix.Rebuild(ctx) }()
	<-inside
	before := schema(t, path)
	err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "id")
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "rebuild scan") {
		t.Fatalf("Detach during a scan = %v, want ErrHeld naming the scan", err)
	}
	if !bytes.Equal(schema(t, path), before) {
		t.Fatal("a refused Detach changed the schema")
	}
	if err := forceDetach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "id"); err != nil {
		t.Fatalf("forced Detach = %v", err)
	}
	close(release)
	<-rebuilt // whatever it says: the source went under it
	hk.scanRow.Store(nil)
	expect(t, ix, set(ids("seed", 20000)), []string{"seed-0000001", "never"})
	if !bytes.Equal(schema(t, path), pristine) {
		t.Fatal("the schema after the forced Detach and the rebuild is not the one before the first attach")
	}
}

// TestScanLeaseOutlivesItsTerm: a scan that runs several times its
// lease's term (shortened to a second by a knob) keeps its lease current,
// renewed as it reads: Detach still refuses with ErrHeld 2.5 terms into
// the scan, when a lease never renewed would have ended.
func TestScanLeaseOutlivesItsTerm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 40000)...)
	cfg, hk := hooked(appConfig(path))
	cfg.knobs.store.ScanChunk = 1000
	cfg.knobs.store.LeaseTerm = time.Second
	ix := open(t, cfg)
	inside, release := make(chan struct{}), make(chan struct{})
	var start time.Time
	var once sync.Once
	hk.scanRow.Store(ptr(func(n int64) error {
		if n <= 1000 {
			start = time.Now()
		}
		select {
		case <-release: // checked: the rest of the scan at full speed
			return nil
		default:
		}
		time.Sleep(150 * time.Millisecond)
		if time.Since(start) > 2500*time.Millisecond { // an unrenewed lease ended by 2 s
			once.Do(func() { close(inside); <-release })
		}
		return nil
	}))
	rebuilt := make(chan error, 1)
	go func() { rebuilt <- ix.Rebuild(ctx) }()
	select {
	case <-inside:
	case err := <-rebuilt:
		t.Fatalf("the rebuild ended (%v) before its scan ran 2.5 lease terms", err)
	}
	err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "id")
	close(release)
	if !errors.Is(err, ErrHeld) {
		t.Fatalf("Detach 2.5 lease terms into a scan = %v, want ErrHeld (the lease was not renewed)", err)
	}
	if err := <-rebuilt; err != nil {
		t.Fatal(err)
	}
	hk.scanRow.Store(nil)
	expect(t, ix, set(ids("seed", 40000)), []string{"seed-0000001", "never"})
}

// TestDetachAfterCloseOfAReattachedIndex: an index whose source was
// attached again (a migration dropped a trigger) leaves nothing behind
// once closed: Detach runs and the schema is as before.
func TestDetachAfterCloseOfAReattachedIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for round := range 5 {
		path := driftDB(t, "WAL", ids("seed", 100))
		pristine := schema(t, path)
		ix := open(t, appConfig(path))
		execIn(t, path, "WAL", `DROP TRIGGER syncfilter_ins_1`)
		if _, err := ix.Fetched(ctx, "seed-0000001"); err != nil { // notices, asks for the attach
			t.Fatal(err)
		}
		if err := ix.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if err := ix.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "id"); err != nil {
			t.Fatalf("round %d: Detach after Close: %v", round, err)
		}
		if !bytes.Equal(schema(t, path), pristine) {
			t.Fatalf("round %d: schema after Detach differs", round)
		}
	}
}

// TestDetachedAcrossSchemaChanges: an index whose source was detached
// under it stays detached through the app's later DDL (each resolves the
// source again) and the follower's turns after its calls (the open's
// first scan asked it to attach, long done): it never attaches the
// source by itself.
func TestDetachedAcrossSchemaChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 100)...)
	cfg := appConfig(path)
	var polls atomic.Int64
	cfg.knobs.followPoll = func() { polls.Add(1) }
	ix := open(t, cfg)
	if err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "id"); err != nil {
		t.Fatal(err)
	}
	app := rawDB(t, path)
	for i := range 3 {
		expect(t, ix, set(ids("seed", 100)), []string{"seed-0000001", "never"})
		mustExec(t, app, fmt.Sprintf(`CREATE TABLE unrelated_%d (x)`, i)) // the schema cookie moves
	}
	expect(t, ix, set(ids("seed", 100)), []string{"seed-0000001", "never"})
	for seen := polls.Load(); polls.Load() < seen+2; { // the follower's turns after the last call
		time.Sleep(time.Millisecond)
	}
	if err := ix.Wait(ctx); !errors.Is(err, ErrNotServing) {
		t.Fatalf("Wait after the detach = %v, want ErrNotServing", err)
	}
	if st := stats(ix); st.Serving || st.Attached {
		t.Fatalf("after the detach and the app's DDL: serving %v, attached %v (the index attached the source again)", st.Serving, st.Attached)
	}
}
