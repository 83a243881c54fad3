package rebuild

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/snapshot"
	"golang.org/x/text/unicode/norm"
)

// guestDB is an app's database in rollback-journal mode (the default), with
// tables whose key columns the library must refuse, and one it accepts.
func guestDB(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := testdriver.Open(path, testdriver.App{BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`,
		`CREATE TABLE ints (id INTEGER UNIQUE)`,
		`CREATE TABLE nums (id NUMERIC UNIQUE)`,
		`CREATE TABLE blobs (id BLOB UNIQUE)`,
		`CREATE TABLE untyped (id UNIQUE)`,
		`CREATE TABLE reals (id DOUBLE UNIQUE)`,
		`CREATE TABLE nocase (id TEXT COLLATE NOCASE UNIQUE)`,
		`CREATE TABLE rtrim (id VARCHAR(36) COLLATE RTRIM PRIMARY KEY)`,
		`CREATE TABLE unindexed (id TEXT, body TEXT)`,
		`CREATE TABLE second (body TEXT, id TEXT)`,
		`CREATE INDEX second_body_id ON second (body, id)`, // id is not its first column
		`CREATE TABLE otherindex (id TEXT)`,
		`CREATE INDEX otherindex_id ON otherindex (id COLLATE NOCASE)`, // not usable for id = ?
		`CREATE VIEW recent AS SELECT id FROM records`,
		`INSERT INTO records VALUES ('r1', 'x')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return path
}

// TestRefusalsLeaveNoTrace runs every refusal of a source on a real app
// database, never attached and already attached (another source): the
// typed error comes before any DDL, sqlite_master and the journal mode are
// exactly as before, and the app's own INSERTs still work.
func TestRefusalsLeaveNoTrace(t *testing.T) {
	cases := []struct {
		table, column string
		want          error
	}{
		{"records", "idd", ErrNoSource}, // a typo
		{"nosuch", "id", ErrNoSource},
		{"recent", "id", ErrNoSource}, // a view
		{"ints", "id", ErrInexactColumn},
		{"nums", "id", ErrInexactColumn},
		{"blobs", "id", ErrInexactColumn},
		{"untyped", "id", ErrInexactColumn},
		{"reals", "id", ErrInexactColumn},
		{"nocase", "id", ErrInexactColumn},
		{"rtrim", "id", ErrInexactColumn},
		{"unindexed", "id", ErrNotIndexed},
		{"second", "id", ErrNotIndexed},
		{"otherindex", "id", ErrNotIndexed},
		{"records", "bad name", ErrBadName},
	}
	for _, attachedFirst := range []bool{false, true} {
		path := guestDB(t)
		if attachedFirst {
			ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id"}})
			if err := ix.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range cases {
			t.Run(fmt.Sprintf("attached=%v/%s.%s", attachedFirst, tc.table, tc.column), func(t *testing.T) {
				before, mode := schema(t, path), journalMode(t, path)
				for _, how := range []string{"Open", "BuildSnapshot"} {
					cfg := config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: tc.table, Column: tc.column, Snapshot: filepath.Join(t.TempDir(), "s.sfb")}}
					var err error
					if how == "Open" {
						var ix *Index
						if ix, err = Open(context.Background(), cfg.DBConfig, cfg.Source); err == nil {
							_ = ix.Close(context.Background())
						}
					} else {
						_, err = BuildSnapshot(context.Background(), cfg.DBConfig, cfg.Source)
					}
					if !errors.Is(err, tc.want) {
						t.Fatalf("%s = %v, want %v", how, err, tc.want)
					}
					if after := schema(t, path); !bytes.Equal(before, after) {
						t.Fatalf("%s changed sqlite_master:\nbefore %s\nafter  %s", how, before, after)
					}
					if got := journalMode(t, path); got != mode {
						t.Fatalf("%s changed the journal mode from %s to %s", how, mode, got)
					}
					if _, err := os.Stat(cfg.Snapshot); !os.IsNotExist(err) {
						t.Fatalf("%s wrote a snapshot: %v", how, err)
					}
				}
				if tc.table == "nosuch" || tc.table == "recent" {
					return
				}
				app := plainDB(t, path)
				if _, err := app.Exec(`INSERT INTO `+store.Quote(tc.table)+` (id) VALUES (?)`, fmt.Sprintf("app-row-%v-%s", attachedFirst, tc.column)); err != nil {
					t.Fatalf("the app's INSERT fails after the refusal: %v", err)
				}
			})
		}
	}
}

// TestFailedAttachRollsBack: a failure inside attach's transaction (here
// an app's index occupying the name of the log table) leaves nothing.
func TestFailedAttachRollsBack(t *testing.T) {
	path := guestDB(t)
	app := rawDB(t, path)
	mustExec(t, app, `CREATE TABLE notes (n TEXT)`)
	mustExec(t, app, `CREATE INDEX syncfilter_log_1 ON notes (n)`)
	before := schema(t, path)
	_, err := Open(context.Background(), DBConfig{Path: path, Driver: testdriver.Driver()}, Source{Table: "records", Column: "id"})
	if err == nil || !strings.Contains(err.Error(), "syncfilter_log_1") {
		t.Fatalf("Open = %v, want the name clash", err)
	}
	if after := schema(t, path); !bytes.Equal(before, after) {
		t.Fatalf("failed attach left a trace:\nbefore %s\nafter  %s", before, after)
	}
	mustExec(t, app, `INSERT INTO records (id) VALUES ('after')`)
}

// TestNamesResolveCaseInsensitively: one table is one source whatever the
// letter case of its name in the configuration.
func TestNamesResolveCaseInsensitively(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	app := rawDB(t, path)
	mustExec(t, app, `CREATE TABLE messages (server_id TEXT PRIMARY KEY)`)
	mustExec(t, app, `INSERT INTO messages VALUES ('m1'), ('m2')`)
	snap := path + ".sfb"
	upper := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "MESSAGES", Column: "SERVER_ID", Snapshot: snap}})
	dsUpper, _ := upper.DatasetID()
	if err := upper.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	lower := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "messages", Column: "server_id", Snapshot: snap}})
	dsLower, _ := lower.DatasetID()
	if dsUpper != dsLower {
		t.Fatalf("two dataset ids for one table: %x, %x", dsUpper, dsLower)
	}
	if err := lower.Stats().SnapshotError; err != nil {
		t.Fatalf("the snapshot saved under MESSAGES is refused under messages: %v", err)
	}
	var sources, triggers int
	_ = app.QueryRow(`SELECT count(*) FROM syncfilter_sources`).Scan(&sources)
	_ = app.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'trigger'`).Scan(&triggers)
	if sources != 1 || triggers != 2 {
		t.Fatalf("%d sources and %d triggers, want 1 and 2", sources, triggers)
	}
	var tbl, col string
	_ = app.QueryRow(`SELECT tbl, col FROM syncfilter_sources`).Scan(&tbl, &col)
	if tbl != "messages" || col != "server_id" {
		t.Fatalf("source recorded as %s.%s, want the stored names messages.server_id", tbl, col)
	}
	mustExec(t, app, `INSERT INTO messages VALUES ('m3')`)
	expect(t, lower, set([]string{"m1", "m2", "m3"}), []string{"m1", "m2", "m3", "m4"})
}

// TestReadOnlyChangesNothing: a read-only index on a database never
// attached answers exactly from SQLite (canonical spellings included) and
// leaves the file, the schema and the journal mode as they were, also
// while another connection holds a write transaction.
func TestReadOnlyChangesNothing(t *testing.T) {
	path := guestDB(t)
	app := plainDB(t, path)
	nfd := norm.NFD.String("Ångström-1")
	kelvin := "\u212a-2" // KELVIN SIGN: NFC is "K-2", an ASCII key
	insertIDs(t, app, nfd, kelvin, "plain-3")
	_ = app.Close()
	before, sum := schema(t, path), fileSum(t, path)

	// Another process-like connection holds a write transaction open.
	writer := plainDB(t, path)
	writer.SetMaxOpenConns(1)
	tx, err := writer.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO records (id) VALUES ('uncommitted')`); err != nil {
		t.Fatal(err)
	}
	ix := open(t, config{DBConfig: DBConfig{Path: path, ReadOnly: true, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb"}})
	st := ix.Stats()
	if st.Attached || st.Serving {
		t.Fatalf("attached %v, serving %v on a database never attached", st.Attached, st.Serving)
	}
	fetched := set([]string{"r1", norm.NFC.String(nfd), nfd, "K-2", kelvin, "plain-3"})
	expect(t, ix, fetched, []string{"r1", norm.NFC.String(nfd), nfd, "K-2", kelvin, "plain-3", "uncommitted", "never", "k-2"})
	ctx := context.Background()
	for name, err := range map[string]error{
		"Rebuild": ix.Rebuild(ctx),
		"Save":    ix.Save(ctx),
	} {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s = %v, want ErrReadOnly", name, err)
		}
	}
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	_ = writer.Close()
	if after := schema(t, path); !bytes.Equal(before, after) {
		t.Fatalf("read-only Open changed sqlite_master:\n%s", after)
	}
	if fileSum(t, path) != sum {
		t.Fatal("read-only Open changed the database file")
	}
	if got := journalMode(t, path); got != "delete" {
		t.Fatalf("journal mode %s", got)
	}
	for _, f := range []string{path + ".sfb", path + "-wal"} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Fatalf("read-only Open created %s", f)
		}
	}
}

// TestReadOnlyUsesAnAttachedSnapshot: on an attached source, a read-only
// index serves from the snapshot and catches up in memory on rows other
// connections committed after it, writing nothing.
func TestReadOnlyUsesAnAttachedSnapshot(t *testing.T) {
	seed := ids("seed", 500)
	path := appDB(t, seed...)
	cfg := appConfig(path)
	first := open(t, cfg)
	if err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	app := rawDB(t, path)
	later := append(ids("later", 50), norm.NFD.String("Éclair-later"))
	insertIDs(t, app, later...)
	if err := checkpoint(path); err != nil {
		t.Fatal(err)
	}
	before, snapSum := schema(t, path), fileSum(t, cfg.Snapshot)
	var logRows, spellingRows int
	if err := app.QueryRow(`SELECT (SELECT count(*) FROM syncfilter_log_1), (SELECT count(*) FROM syncfilter_spellings_1)`).Scan(&logRows, &spellingRows); err != nil {
		t.Fatal(err)
	}

	cfg.ReadOnly = true
	ix := open(t, cfg)
	if st := ix.Stats(); !st.Serving || !st.Attached || st.SnapshotError != nil {
		t.Fatalf("serving %v, attached %v, snapshot error %v", st.Serving, st.Attached, st.SnapshotError)
	}
	all := append(slices.Clone(seed), later...)
	all = append(all, norm.NFC.String(later[len(later)-1]))
	expect(t, ix, set(all), append(all, ids("never", 200)...))
	if err := ix.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := schema(t, path); !bytes.Equal(before, after) {
		t.Fatal("read-only Open changed sqlite_master")
	}
	if fileSum(t, cfg.Snapshot) != snapSum {
		t.Fatal("read-only Open rewrote the snapshot")
	}
	var logAfter, spellingsAfter int
	if err := app.QueryRow(`SELECT (SELECT count(*) FROM syncfilter_log_1), (SELECT count(*) FROM syncfilter_spellings_1)`).Scan(&logAfter, &spellingsAfter); err != nil {
		t.Fatal(err)
	}
	if logAfter != logRows || spellingsAfter != spellingRows {
		t.Fatalf("log %d→%d, spellings %d→%d rows", logRows, logAfter, spellingRows, spellingsAfter)
	}
}

// TestSnapshotTargetRefusals: no configuration can make the library
// replace the database (under any path), one of its files, a directory,
// a file that is not a snapshot or another dataset's snapshot (the last
// two unless forced); refusals come before any DDL or scan.
func TestSnapshotTargetRefusals(t *testing.T) {
	path := guestDB(t)
	dir := filepath.Dir(path)
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("my notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	otherDB := appDB(t, ids("other", 10)...)
	foreign := appConfig(otherDB)
	if ix := open(t, foreign); ix.Close(context.Background()) != nil {
		t.Fatal("close")
	}
	if err := os.WriteFile(path+"-journal", nil, 0o644); err != nil { // as a crash may leave it
		t.Fatal(err)
	}
	defer os.Remove(path + "-journal")

	for _, tc := range []struct {
		name, target string
		forcible     bool
	}{
		{"database", path, false},
		{"via dotdot", filepath.Join(dir, "sub", "..", "app.db"), false},
		{"via symlink", link, false},
		{"wal", path + "-wal", false},
		{"shm", path + "-shm", false},
		{"journal", path + "-journal", false},
		{"directory", dir, false},
		{"not a snapshot", notes, true},
		{"empty file", empty, true},
		{"another dataset's snapshot", foreign.Snapshot, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sums [][32]byte
			for _, f := range []string{notes, foreign.Snapshot} {
				sums = append(sums, fileSum(t, f))
			}
			for _, force := range []bool{false, true} {
				cfg := config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: tc.target, ReplaceForeignFile: force}}
				before := schema(t, path)
				_, jobErr := BuildSnapshot(context.Background(), cfg.DBConfig, cfg.Source)
				if force && tc.forcible {
					if jobErr != nil {
						t.Fatalf("forced: BuildSnapshot = %v", jobErr)
					}
					if _, err := snapshot.ReadFile(tc.target); err != nil {
						t.Fatalf("forced: %v", err)
					}
					return // the forced writes changed the files on purpose
				}
				if !errors.Is(jobErr, ErrUnsafeTarget) {
					t.Fatalf("force=%v: BuildSnapshot = %v, want ErrUnsafeTarget", force, jobErr)
				}
				if after := schema(t, path); !bytes.Equal(before, after) {
					t.Fatal("a refused cron job left DDL behind")
				}
				// The app's Open is available all the same: it serves and
				// reports why it saves no snapshot there.
				ix, err := Open(context.Background(), cfg.DBConfig, cfg.Source)
				if err != nil {
					t.Fatalf("force=%v: Open = %v", force, err)
				}
				waitServing(t, ix)
				if st := ix.Stats(); !errors.Is(st.SnapshotError, ErrUnsafeTarget) || !st.Serving {
					t.Fatalf("force=%v: serving %v, SnapshotError %v, want ErrUnsafeTarget", force, st.Serving, st.SnapshotError)
				}
				if err := ix.Save(context.Background()); !errors.Is(err, ErrUnsafeTarget) {
					t.Fatalf("force=%v: Save = %v, want ErrUnsafeTarget", force, err)
				}
				if err := ix.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				for i, f := range []string{notes, foreign.Snapshot} {
					if fileSum(t, f) != sums[i] {
						t.Fatalf("%s changed", f)
					}
				}
				var check string
				if err := plainDB(t, path).QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
					t.Fatalf("the database after the refusal: %q, %v", check, err)
				}
			}
			if _, err := plainDB(t, path).Exec(`INSERT INTO records (id) VALUES (?)`, "after-"+tc.name); err != nil {
				t.Fatalf("the app's INSERT fails after the refusal: %v", err)
			}
		})
	}
}

// TestFailedOwnTableOpenLeavesNoDatabase: an Open of the library's own
// table that starts a new database file and then fails (here, its first
// scan) removes the file it created.
func TestFailedOwnTableOpenLeavesNoDatabase(t *testing.T) {
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

// TestSaveRefusesAFileThatAppeared: the check runs at every save, not
// only at Open: a file put in the snapshot's place later is not replaced.
func TestSaveRefusesAFileThatAppeared(t *testing.T) {
	path := appDB(t, ids("seed", 100)...)
	cfg := appConfig(path)
	ix := open(t, cfg)
	if err := os.WriteFile(cfg.Snapshot, []byte("someone else's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ix.Save(context.Background()); !errors.Is(err, ErrUnsafeTarget) {
		t.Fatalf("Save = %v, want ErrUnsafeTarget", err)
	}
	if got, _ := os.ReadFile(cfg.Snapshot); string(got) != "someone else's\n" {
		t.Fatal("Save replaced the file")
	}
}

// TestDetachRestoresTheSchema: after Detach, sqlite_master is exactly
// what it was before the first attach, and the app's writes work.
func TestDetachRestoresTheSchema(t *testing.T) {
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
	if err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "bad name"); !errors.Is(err, ErrBadName) {
		t.Fatalf("Detach with a bad name = %v", err)
	}
}

// TestDetachOwnTable removes the library's own table with the rest.
func TestDetachOwnTable(t *testing.T) {
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
	if st := ix.Stats(); st.Serving || st.Attached {
		t.Fatalf("after the detach: serving %v, attached %v", st.Serving, st.Attached)
	}
	if !bytes.Equal(schema(t, path), pristine) {
		t.Fatal("the index attached the source again by itself")
	}
	again := open(t, appConfig(path))
	expect(t, again, set(ids("seed", 100), []string{"after-detach"}), []string{"after-detach", "never"})
	if st := again.Stats(); !st.Serving || !st.Attached {
		t.Fatalf("a new open: serving %v, attached %v", st.Serving, st.Attached)
	}
}

// TestDetachRefusesDuringAScan: while a rebuild scans the source (here
// one in this process; its lease is a row any process sees), Detach
// refuses with ErrHeld naming the scan and changes nothing; Force
// detaches, and the rebuild fails without leaving anything behind.
func TestDetachRefusesDuringAScan(t *testing.T) {
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
	if err := DetachWith(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "id", DetachOptions{Force: true}); err != nil {
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

// TestAppDefinedCollationIsRefused: a key column under a collation the
// app defined (one that folds an accent, say) is refused with
// ErrInexactColumn, whether the library's connections have the collation
// (a driver that defines it on every connection, which DBConfig.DB hands
// over) or not; before the check read the collation by name, a library
// that had it accepted the column and confirmed never-fetched ids that
// the collation equates with stored ones.
func TestAppDefinedCollationIsRefused(t *testing.T) {
	ctx := context.Background()
	unaccent := func(a, b string) int {
		return strings.Compare(strings.ReplaceAll(a, "é", "e"), strings.ReplaceAll(b, "é", "e"))
	}
	withColl, ok := testdriver.WithCollation("UNACCENT", unaccent)
	if !ok {
		t.Skipf("%s defines collations per handle, not per driver", testdriver.Name())
	}
	path := filepath.Join(t.TempDir(), "app.db")
	app := sql.OpenDB(connector{d: withColl, dsn: testdriver.DSN(testdriver.Name(), path, testdriver.App{JournalMode: "WAL", BusyTimeout: 10 * time.Second})})
	t.Cleanup(func() { _ = app.Close() })
	mustExec(t, app, `CREATE TABLE records (id TEXT COLLATE UNACCENT PRIMARY KEY, body TEXT)`)
	mustExec(t, app, `INSERT INTO records (id) VALUES ('café-1')`)
	before := schema(t, path)
	for name, d := range map[string]driver.Driver{"with the collation": withColl, "without it": testdriver.Driver()} {
		_, err := Open(ctx, DBConfig{Path: path, Driver: d}, Source{Table: "records", Column: "id"})
		if !errors.Is(err, ErrInexactColumn) {
			t.Fatalf("%s: Open = %v, want ErrInexactColumn", name, err)
		}
	}
	if after := schema(t, path); !bytes.Equal(before, after) {
		t.Fatalf("a refusal changed sqlite_master:\nbefore %s\nafter  %s", before, after)
	}
}

// connector opens connections of a driver value for sql.OpenDB.
type connector struct {
	d   driver.Driver
	dsn string
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.d }

// TestUTF16DatabaseIsRefused: a database whose text encoding is UTF-16
// is refused at open with ErrNotUTF8, naming the encoding, and nothing is
// written to it.
func TestUTF16DatabaseIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	app := rawDB(t, path)
	app.SetMaxOpenConns(1)
	mustExec(t, app, `PRAGMA encoding = 'UTF-16le'`)
	mustExec(t, app, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`)
	mustExec(t, app, `INSERT INTO records (id) VALUES ('café-1')`)
	before := schema(t, path)
	_, err := Open(context.Background(), DBConfig{Path: path, Driver: testdriver.Driver()}, Source{Table: "records", Column: "id"})
	if !errors.Is(err, ErrNotUTF8) || !strings.Contains(err.Error(), "UTF-16") {
		t.Fatalf("Open of a UTF-16 database = %v, want ErrNotUTF8 naming the encoding", err)
	}
	if after := schema(t, path); !bytes.Equal(before, after) {
		t.Fatalf("the refusal changed sqlite_master:\nbefore %s\nafter  %s", before, after)
	}
}
