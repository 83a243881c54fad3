package rebuild

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"golang.org/x/text/unicode/norm"
)

// Schema drift: the app's migrations run in a second process (a real app
// migrates in whatever process starts first), while an index is open and
// while it is closed. Every answer afterwards is checked against the
// table the name refers to then.

// expectTable checks every answer of ix about probe against the rows
// table stores now.
func expectTable(t *testing.T, ix *Index, path, table string, probe []string) {
	t.Helper()
	exact(t, ix, tableIDs(t, path, table), probe)
}

// migration is an app's schema change of records, as statements run in
// one Exec each (BEGIN/COMMIT included where the app uses a transaction).
type migration struct {
	name string
	// stmts returns the statements; triggers are the library's triggers
	// on records before the migration (an app following SQLite's 12-step
	// procedure recreates every trigger of the table from their text).
	stmts func(triggers []string) []string
	// extra is a table that keeps rows written after the migration which
	// the index must report missing ("" if none).
	extra string
	// rollbackToo: run in DELETE mode as well as in WAL mode.
	rollbackToo bool
}

var migrations = []migration{
	{name: "12-step", stmts: func([]string) []string {
		// https://sqlite.org/lang_altertable.html#otheralter: create the new
		// table, copy, drop the old one, rename the new one.
		return []string{
			`PRAGMA foreign_keys = OFF`,
			`BEGIN`,
			`CREATE TABLE records_new (id TEXT PRIMARY KEY, body TEXT, added INTEGER NOT NULL DEFAULT 0)`,
			`INSERT INTO records_new (id, body) SELECT id, body FROM records`,
			`DROP TABLE records`,
			`ALTER TABLE records_new RENAME TO records`,
			`COMMIT`,
		}
	}},
	{name: "12-step-keeps-triggers", rollbackToo: true, stmts: func(triggers []string) []string {
		// The same, recreating the table's triggers (ours included) from
		// their text, as the procedure's step 8 says; the migration also
		// writes a row of its own before they are back.
		q := []string{
			`BEGIN`,
			`CREATE TABLE records_new (id TEXT PRIMARY KEY, body TEXT, added INTEGER NOT NULL DEFAULT 0)`,
			`INSERT INTO records_new (id, body) SELECT id, body FROM records`,
			`INSERT INTO records_new (id, body) VALUES ('migrated-0000000', 'default row')`,
			`DROP TABLE records`,
			`ALTER TABLE records_new RENAME TO records`,
		}
		return append(append(q, triggers...), `COMMIT`)
	}},
	{name: "drop-create", rollbackToo: true, stmts: func([]string) []string {
		// No transaction: calls may come between the two.
		return []string{
			`DROP TABLE records`,
			`CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`,
			`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 99)
				INSERT INTO records (id) SELECT 'seed-' || printf('%07d', i) FROM n`,
		}
	}},
	{name: "rename-and-new", extra: "records_old", rollbackToo: true, stmts: func([]string) []string {
		return []string{
			`ALTER TABLE records RENAME TO records_old`,
			`CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`,
		}
	}},
	{name: "vacuum", stmts: func([]string) []string {
		// Renumbers sqlite_master: the source may be attached again
		// (slower), never answered wrongly.
		return []string{`CREATE TABLE scratch (x)`, `DROP TABLE scratch`, `VACUUM`}
	}},
	{name: "drop-trigger", stmts: func([]string) []string {
		// A tool that drops every trigger of the table, then writes.
		return []string{`DROP TRIGGER syncfilter_ins_1`}
	}},
}

// triggersOn returns the text of the triggers on table.
func triggersOn(t *testing.T, path, table string) []string {
	t.Helper()
	db, err := testdriver.Open(path, testdriver.App{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ? ORDER BY name`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestMigrationsAreFollowed: for each migration, in WAL and in rollback
// mode, with the index open during the migration and closed: the rows
// stored after it (and the migration's own) are fetched, the rows of a
// table that no longer has the name are missing, the source is attached
// again to the table the name refers to, its snapshot reloads, and Detach
// removes everything.
func TestMigrationsAreFollowed(t *testing.T) {
	t.Parallel()
	seed := ids("seed", 300)
	never := ids("never", 100)
	for _, mode := range []string{"WAL", "DELETE"} {
		for _, m := range migrations {
			if mode == "DELETE" && !m.rollbackToo {
				continue // the mode changes nothing here that TestEveryJournalMode does not cover
			}
			for _, whileOpen := range []bool{true, false} {
				name := fmt.Sprintf("%s/%s/open=%v", mode, m.name, whileOpen)
				t.Run(name, func(t *testing.T) {
					t.Parallel() // each on its own files; mostly waiting for the disk
					ctx := context.Background()
					path := driftDB(t, mode, seed)
					cfg := appConfig(path)
					ix := open(t, cfg)
					probe := slices.Concat(seed, never, ids("after", 100), ids("later", 100), ids("old", 50), ids("migrated", 1))
					expectTable(t, ix, path, "records", probe)
					triggers := triggersOn(t, path, "records")
					if len(triggers) != 2 {
						t.Fatalf("triggers on records: %q", triggers)
					}
					if !whileOpen {
						if err := ix.Close(ctx); err != nil {
							t.Fatal(err)
						}
					}
					execIn(t, path, mode, m.stmts(triggers)...)
					if whileOpen {
						expectTable(t, ix, path, "records", probe)
					}
					insertIn(t, path, mode, "records", "after", 100)
					if m.extra != "" {
						insertIn(t, path, mode, m.extra, "old", 50)
					}
					if !whileOpen {
						ix = open(t, cfg)
					}
					// Exact right away (from SQLite while the source is
					// attached again), and once a filter serves again.
					want := tableIDs(t, path, "records")
					for _, id := range ids("after", 100) {
						if !want[id] {
							t.Fatalf("%s not stored", id)
						}
					}
					exact(t, ix, want, probe)
					waitServing(t, ix)
					expectTable(t, ix, path, "records", probe)
					st := stats(ix)
					if !st.Attached || !st.Serving {
						t.Fatalf("after the migration: attached %v, serving %v, last error %v", st.Attached, st.Serving, st.LastError)
					}
					objs := libraryObjects(t, path)
					for _, o := range objs {
						if strings.HasPrefix(o, "trigger ") && !strings.HasSuffix(o, " on records") {
							t.Fatalf("a trigger of the library on another table: %q", objs)
						}
					}
					if got := triggersOn(t, path, "records"); len(got) != 2 || !strings.Contains(got[0], "ON `records`") {
						t.Fatalf("triggers on records after the migration: %q", got)
					}
					insertIn(t, path, mode, "records", "later", 100)
					if m.extra != "" {
						insertIn(t, path, mode, m.extra, "old-later", 10)
					}
					expectTable(t, ix, path, "records", probe)
					if err := ix.Close(ctx); err != nil {
						t.Fatal(err)
					}
					again := open(t, cfg)
					if st := stats(again); !st.Serving || st.SnapshotError != nil {
						t.Fatalf("reopen: serving %v, snapshot error %v", st.Serving, st.SnapshotError)
					}
					expectTable(t, again, path, "records", probe)
					if err := again.Close(ctx); err != nil {
						t.Fatal(err)
					}
					if got := journalMode(t, path); !strings.EqualFold(got, mode) {
						t.Fatalf("journal mode %s, want %s", got, mode)
					}
					if err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "id"); err != nil {
						t.Fatal(err)
					}
					if objs := libraryObjects(t, path); len(objs) != 0 {
						t.Fatalf("after Detach: %q", objs)
					}
					integrity(t, path)
				})
			}
		}
	}
}

// TestRepairWaitsForACall: after the app's 12-step migration, with
// AutoRebuild on, the library writes nothing (its attach would make the
// app's connections parse the schema again and drop their caches under
// the app's next page) until a call has been answered, from SQLite; then
// it attaches and rebuilds in the background. Wait starts it too.
func TestRepairWaitsForACall(t *testing.T) {
	t.Parallel()
	seed := ids("seed", 300)
	probe := slices.Concat(seed, ids("never", 50), ids("after", 50))
	for _, byWait := range []bool{false, true} {
		t.Run(fmt.Sprintf("wait=%v", byWait), func(t *testing.T) {
			t.Parallel()
			path := driftDB(t, "WAL", seed)
			ix := open(t, repairConfig(path))
			waitServing(t, ix)
			app := modeConn(t, path, "WAL")
			defer app.Close()
			exact(t, ix, tableIDs(t, path, "records"), probe) // the follower watches for a while after a call
			for _, q := range migrations[0].stmts(nil) {
				mustExec(t, app, q)
			}
			cookie, before := schemaVersion(t, path), stats(ix)
			deadline := time.Now().Add(10 * time.Second)
			for stats(ix).Serving { // the follower sees the triggers gone and drops the filter
				if time.Now().After(deadline) {
					st := stats(ix)
					t.Fatalf("the filter still serves 10 s after the migration (the follower's window passed?): upkeep %q, reattached %d, rebuilds %d", st.Upkeep, st.Reattached, st.Rebuilds)
				}
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond) // time enough to attach, were it asked
			st := stats(ix)
			if got := schemaVersion(t, path); got != cookie || len(triggersOn(t, path, "records")) != 0 {
				t.Fatalf("before any call: schema %d → %d, triggers %q", cookie, got, triggersOn(t, path, "records"))
			}
			if st.Upkeep != "rebuild" || st.Attached || st.Reattached != before.Reattached || st.Rebuilds != before.Rebuilds {
				t.Fatalf("before any call: upkeep %q, attached %v, reattached %d → %d, rebuilds %d → %d",
					st.Upkeep, st.Attached, before.Reattached, st.Reattached, before.Rebuilds, st.Rebuilds)
			}
			insertIn(t, path, "WAL", "records", "after", 50)
			if !byWait {
				exact(t, ix, tableIDs(t, path, "records"), probe) // from SQLite, then the repair starts
				for deadline = time.Now().Add(20 * time.Second); !stats(ix).Attached; time.Sleep(5 * time.Millisecond) {
					if time.Now().After(deadline) { // no Wait here: the call must have started it
						t.Fatalf("the repair did not start after the call: upkeep %q", stats(ix).Upkeep)
					}
				}
			}
			waitServing(t, ix)
			if st := stats(ix); !st.Serving || !st.Attached || len(triggersOn(t, path, "records")) != 2 {
				t.Fatalf("after the repair: serving %v, attached %v, triggers %q", st.Serving, st.Attached, triggersOn(t, path, "records"))
			}
			exact(t, ix, tableIDs(t, path, "records"), probe)
		})
	}
}

// schemaVersion is the database's schema cookie, read on a connection of
// its own.
func schemaVersion(t *testing.T, path string) int64 {
	t.Helper()
	db, err := testdriver.Open(path, testdriver.App{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int64
	if err := db.QueryRow(`PRAGMA schema_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestUnrelatedDDLKeepsTheFilter: a schema change that leaves the source
// alone (another table, an index, a view) is noticed and checked, and
// the filter keeps serving: nothing is attached again or rebuilt.
func TestUnrelatedDDLKeepsTheFilter(t *testing.T) {
	t.Parallel()
	seed := ids("seed", 300)
	path := driftDB(t, "WAL", seed)
	ix := open(t, appConfig(path))
	before := stats(ix)
	execIn(t, path, "WAL",
		`CREATE TABLE notes (n TEXT)`,
		`CREATE INDEX records_body ON records (body)`,
		`CREATE VIEW recent AS SELECT id FROM records`,
		`ALTER TABLE records ADD COLUMN extra TEXT`)
	insertIn(t, path, "WAL", "records", "after", 50)
	probe := slices.Concat(seed, ids("after", 50), ids("never", 50))
	expectTable(t, ix, path, "records", probe)
	st := stats(ix)
	if !st.Serving || st.Reattached != before.Reattached || st.Dropped != before.Dropped || st.Rebuilds != before.Rebuilds {
		t.Fatalf("unrelated DDL: serving %v, reattached %d→%d, dropped %d→%d, rebuilds %d→%d",
			st.Serving, before.Reattached, st.Reattached, before.Dropped, st.Dropped, before.Rebuilds, st.Rebuilds)
	}
}

// generatedDB creates a database whose gen table is keyed by a generated
// column (STORED or VIRTUAL), indexed.
func generatedDB(t *testing.T, kind string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.db")
	db := plainDB(t, path)
	mustExec(t, db, `CREATE TABLE gen (src TEXT, id TEXT GENERATED ALWAYS AS ('g-' || src) `+kind+`)`)
	mustExec(t, db, `CREATE UNIQUE INDEX gen_id ON gen (id)`)
	mustExec(t, db, `INSERT INTO gen (src) VALUES ('a'), ('b')`)
	_ = db.Close()
	return path
}

// TestGeneratedKeysAreRefused: a generated key column (an UPDATE of the
// column it is computed from re-keys the row without firing an UPDATE OF
// trigger on the key) is refused at attach, before any write, by Open,
// BuildSnapshot and a read-only Open alike.
func TestGeneratedKeysAreRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, kind := range []string{"STORED", "VIRTUAL"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			path := generatedDB(t, kind)
			before, sum := schema(t, path), fileSum(t, path)
			cfg := config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "gen", Column: "id", Snapshot: path + ".sfb"}}
			if _, err := Open(ctx, cfg.DBConfig, cfg.Source); !errors.Is(err, ErrInexactColumn) {
				t.Fatalf("Open = %v, want ErrInexactColumn", err)
			}
			if _, err := BuildSnapshot(ctx, cfg.DBConfig, cfg.Source); !errors.Is(err, ErrInexactColumn) {
				t.Fatalf("BuildSnapshot = %v, want ErrInexactColumn", err)
			}
			cfg.ReadOnly = true
			if _, err := Open(ctx, cfg.DBConfig, cfg.Source); !errors.Is(err, ErrInexactColumn) {
				t.Fatalf("read-only Open = %v, want ErrInexactColumn", err)
			}
			if !bytes.Equal(schema(t, path), before) || fileSum(t, path) != sum {
				t.Fatal("a refused generated key changed the database")
			}
			if entries := dirEntries(t, filepath.Dir(path)); fmt.Sprint(entries) != "[app.db]" {
				t.Fatalf("files after the refusals: %v", entries)
			}
		})
	}
}

// TestMigrationToAGeneratedKey: a migration that makes the key column
// generated (the 12-step procedure) while the index is open: once a call
// reads the schema (a page's probe), every call fails with
// ErrInexactColumn instead of answering, also after
// an UPDATE of the base column re-keyed a row, and after reopening; a
// migration back to a stored column makes the index answer exactly again.
func TestMigrationToAGeneratedKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, kind := range []string{"STORED", "VIRTUAL"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			seed := ids("seed", 200)
			path := driftDB(t, "WAL", seed)
			cfg := appConfig(path)
			ix := open(t, cfg)
			probe := slices.Concat(seed, ids("never", 50), []string{"g-seed-0000001", "g-x"})
			expectTable(t, ix, path, "records", probe)
			execIn(t, path, "WAL",
				`BEGIN`,
				`CREATE TABLE records_new (src TEXT, body TEXT, id TEXT GENERATED ALWAYS AS ('g-' || src) `+kind+`)`,
				`CREATE UNIQUE INDEX records_new_id ON records_new (id)`,
				`INSERT INTO records_new (src, body) SELECT id, body FROM records`,
				`DROP TABLE records`,
				`ALTER TABLE records_new RENAME TO records`,
				`COMMIT`,
				`UPDATE records SET src = 'x' WHERE src = 'seed-0000000'`)
			refused := func(ix *Index) {
				t.Helper()
				// A page reads the schema in its probe: it sees the
				// migration; from then on every call is refused, the
				// single-id lookup too (which, before anything saw the
				// migration, answers exactly from the table as it is).
				if got, err := missingList(ctx, ix, probe); !errors.Is(err, ErrInexactColumn) || got != nil {
					t.Fatalf("Missing = %d keys, %v, want ErrInexactColumn", len(got), err)
				}
				if _, err := ix.Fetched(ctx, "g-x"); !errors.Is(err, ErrInexactColumn) {
					t.Fatalf("Fetched = %v, want ErrInexactColumn", err)
				}
			}
			refused(ix)
			if err := ix.Rebuild(ctx); !errors.Is(err, ErrInexactColumn) {
				t.Fatalf("Rebuild = %v, want ErrInexactColumn", err)
			}
			execIn(t, path, "WAL", `INSERT INTO records (src) VALUES ('y')`)
			refused(ix)
			if _, err := Open(ctx, cfg.DBConfig, cfg.Source); !errors.Is(err, ErrInexactColumn) {
				t.Fatalf("a second Open = %v, want ErrInexactColumn", err)
			}
			// Back to a stored key: the index open all along answers
			// exactly again, attached to the new table.
			execIn(t, path, "WAL",
				`BEGIN`,
				`CREATE TABLE records_new (id TEXT PRIMARY KEY, body TEXT)`,
				`INSERT INTO records_new (id, body) SELECT id, body FROM records`,
				`DROP TABLE records`,
				`ALTER TABLE records_new RENAME TO records`,
				`COMMIT`)
			probe = append(probe, "g-y")
			expectTable(t, ix, path, "records", probe)
			if !tableIDs(t, path, "records")["g-x"] {
				t.Fatal("the re-keyed row is not stored")
			}
			waitServing(t, ix)
			insertIn(t, path, "WAL", "records", "after", 50)
			probe = append(probe, ids("after", 50)...)
			expectTable(t, ix, path, "records", probe)
			if err := ix.Close(ctx); err != nil {
				t.Fatal(err)
			}
			again := open(t, cfg)
			if st := stats(again); !st.Serving || st.SnapshotError != nil {
				t.Fatalf("reopen: serving %v, snapshot error %v", st.Serving, st.SnapshotError)
			}
			expectTable(t, again, path, "records", probe)
		})
	}
}

// TestDriftToASourceThatCannotBeExact: a migration that leaves the name
// without a table, the key column without exact comparison or without an
// index makes every call, once one read the schema, fail with the typed
// error instead of answering
// (the triggers of the old table are gone or no longer prove anything);
// the migration reverted, the same index answers exactly again.
func TestDriftToASourceThatCannotBeExact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rebuildAs := func(ddl string, extra ...string) []string {
		q := []string{`BEGIN`, ddl}
		q = append(q, extra...)
		return append(q,
			`INSERT INTO records_new (id, body) SELECT id, body FROM records`,
			`DROP TABLE records`,
			`ALTER TABLE records_new RENAME TO records`,
			`COMMIT`)
	}
	back := rebuildAs(`CREATE TABLE records_new (id TEXT, body TEXT)`, `CREATE UNIQUE INDEX records_id ON records_new (id)`)
	for _, tc := range []struct {
		name    string
		forward []string
		want    error
	}{
		{"NOCASE", rebuildAs(`CREATE TABLE records_new (id TEXT COLLATE NOCASE PRIMARY KEY, body TEXT)`), ErrInexactColumn},
		{"INTEGER", rebuildAs(`CREATE TABLE records_new (id INTEGER UNIQUE, body TEXT)`), ErrInexactColumn},
		{"index dropped", []string{`DROP INDEX records_id`}, ErrNotIndexed},
		{"column renamed", []string{`ALTER TABLE records RENAME COLUMN id TO server_id`}, ErrNoSource},
		{"table dropped", []string{`ALTER TABLE records RENAME TO archive`}, ErrNoSource},
		{"a view of the name", []string{`ALTER TABLE records RENAME TO archive`, `CREATE VIEW records AS SELECT id, body FROM archive`}, ErrNoSource},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "app.db")
			app := rawDB(t, path)
			mustExec(t, app, `CREATE TABLE records (id TEXT, body TEXT)`)
			mustExec(t, app, `CREATE UNIQUE INDEX records_id ON records (id)`)
			seed := ids("seed", 200)
			insertIDs(t, app, seed...)
			cfg := appConfig(path)
			ix := open(t, cfg)
			probe := slices.Concat(seed, ids("during", 10), ids("after", 10), ids("never", 50))
			exact(t, ix, tableIDs(t, path, "records"), probe)
			execIn(t, path, "WAL", tc.forward...)
			// Right after the migration, before any call read the schema:
			// a single id is answered exactly or refused, never "fetched"
			// when not stored (the key "id" is the column's old name,
			// which a double-quoted name would have compared with).
			for _, k := range []string{"id", "id ", "never-x", "SEED-0000001"} {
				if got, err := ix.Fetched(ctx, k); err == nil && got {
					t.Fatalf("right after the migration, Fetched(%q) = true", k)
				}
			}
			for i := range 2 {
				// The page's probe reads the schema; then the single-id
				// lookup is refused too.
				if got, err := missingList(ctx, ix, probe); !errors.Is(err, tc.want) || got != nil {
					t.Fatalf("Missing = %d keys, %v, want %v", len(got), err, tc.want)
				}
				if _, err := ix.Fetched(ctx, "seed-0000001"); !errors.Is(err, tc.want) {
					t.Fatalf("Fetched = %v, want %v", err, tc.want)
				}
				if i == 0 && tc.name == "column renamed" {
					execIn(t, path, "WAL", `INSERT INTO records (server_id) VALUES ('during-0000000')`)
				}
			}
			switch tc.name {
			case "column renamed":
				execIn(t, path, "WAL", `ALTER TABLE records RENAME COLUMN server_id TO id`)
			case "table dropped":
				execIn(t, path, "WAL", `ALTER TABLE archive RENAME TO records`)
			case "a view of the name":
				execIn(t, path, "WAL", `DROP VIEW records`, `ALTER TABLE archive RENAME TO records`)
			case "index dropped":
				execIn(t, path, "WAL", `CREATE UNIQUE INDEX records_id ON records (id)`)
			default:
				execIn(t, path, "WAL", back...)
			}
			insertIn(t, path, "WAL", "records", "after", 10)
			exact(t, ix, tableIDs(t, path, "records"), probe)
			waitServing(t, ix)
			exact(t, ix, tableIDs(t, path, "records"), probe)
		})
	}
}

// TestMigrationWhileAsking: goroutines ask without pause while another
// process runs a migration in one transaction (the 12-step procedure that
// recreates the library's triggers from their text and writes a row of
// its own, or a rename with a new table of the old name). Every answer
// is exactly the one before or the one after the migration, and every
// call that starts after it commits answers about the table after it
// (run it with -race).
func TestMigrationWhileAsking(t *testing.T) {
	t.Parallel()
	seed := ids("seed", 300)
	for _, m := range migrations {
		var stored map[string]bool // after the migration
		switch m.name {
		case "12-step-keeps-triggers":
			stored = set(seed, ids("migrated", 1))
		case "rename-and-new":
			stored = map[string]bool{}
		default:
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			path := driftDB(t, "WAL", seed)
			ix := open(t, appConfig(path))
			probe := slices.Concat(seed[:150], ids("migrated", 1), ids("never", 100))
			before, after := missingOf(probe, tableIDs(t, path, "records")), missingOf(probe, stored)
			triggers := triggersOn(t, path, "records")
			var migrated atomic.Bool
			var answersAfter atomic.Int64
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for g := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						done := migrated.Load()
						got, err := missingList(ctx, ix, probe)
						switch {
						case err != nil:
							t.Errorf("Missing: %v", err)
							return
						case slices.Equal(got, after):
						case slices.Equal(got, before) && !done:
						default:
							t.Errorf("goroutine %d, call %d (after the migration: %v): %d missing keys %.80q; want %d before, %d after",
								g, i, done, len(got), got, len(before), len(after))
							return
						}
						if done {
							answersAfter.Add(1)
						}
					}
				}()
			}
			waitFor(t, "answers before the migration", func() bool { return stats(ix).Queries > 3000 || t.Failed() })
			stmts := m.stmts(triggers)
			if stmts[0] != "BEGIN" { // one transaction: no call can see the name without a table
				stmts = append(append([]string{"BEGIN"}, stmts...), "COMMIT")
			}
			execIn(t, path, "WAL", stmts...)
			if got := missingOf(probe, tableIDs(t, path, "records")); !slices.Equal(got, after) {
				t.Fatalf("the table after the migration is not what the test expects: %d missing", len(got))
			}
			migrated.Store(true)
			waitFor(t, "answers after the migration", func() bool { return answersAfter.Load() >= 100 || t.Failed() })
			close(stop)
			wg.Wait()
		})
	}
}

// TestMigrationAfterDeletesKeepsTheFilter: rows deleted and re-keyed
// before a rebuild stay in the log but not in the filter; a migration
// afterwards takes the log again into the filter and keeps it (no drop,
// no rebuild), and answers stay exact.
func TestMigrationAfterDeletesKeepsTheFilter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("old", 100)...)
	ix := open(t, appConfig(path))
	waitServing(t, ix)
	app := rawDB(t, path)
	insertIDs(t, app, ids("tmp", 20)...)
	expect(t, ix, set(ids("old", 100), ids("tmp", 20)), []string{"tmp-0000001"})
	mustExec(t, app, `DELETE FROM records WHERE id LIKE 'tmp-%'`)
	mustExec(t, app, `UPDATE records SET id = 'rk-' || id WHERE id LIKE 'old-000000%'`)
	if err := ix.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	before := stats(ix)
	mustExec(t, app, `CREATE TABLE unrelated (a TEXT)`)
	mustExec(t, app, `ALTER TABLE records ADD COLUMN extra INTEGER`)
	stored := set(ids("old", 100)[10:])
	for _, k := range ids("old", 10) {
		stored["rk-"+k] = true
	}
	expect(t, ix, stored, append(append(ids("tmp", 20), ids("old", 100)...), "rk-old-0000001"))
	if st := stats(ix); st.Dropped != before.Dropped || st.Rebuilds != before.Rebuilds || !st.Serving {
		t.Fatalf("dropped %d → %d, rebuilds %d → %d, serving %v: the migration should keep the filter", before.Dropped, st.Dropped, before.Rebuilds, st.Rebuilds, st.Serving)
	}
}

// TestConfirmAfterAMigrationIsExact: a migration that commits between a
// call's probe (which checks the schema) and a confirmation the call runs
// in a statement of its own (here a page too long for the probe to
// confirm, on a read-only index without a filter) cannot make that
// confirmation match a key never stored: not the key column made COLLATE
// NOCASE ("ABC" against "abc"), not one given INTEGER affinity ("007"
// against 7). The next call refuses the column.
func TestConfirmAfterAMigrationIsExact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ decl, stored, asked string }{
		{"TEXT COLLATE NOCASE PRIMARY KEY", "abc", "ABC"},
		{"INTEGER UNIQUE", "7", "007"},
	} {
		t.Run(tc.decl, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			path := appDB(t, tc.stored, "caf\u00e9")
			app := rawDB(t, path)
			var once sync.Once
			migrate := func() { // after the probe, before the confirmation
				once.Do(func() {
					for _, q := range []string{
						`CREATE TABLE records_new (id ` + tc.decl + `, body TEXT)`,
						`INSERT INTO records_new SELECT * FROM records`,
						`DROP TABLE records`,
						`ALTER TABLE records_new RENAME TO records`,
					} {
						mustExec(t, app, q)
					}
				})
			}
			ix := open(t, config{DBConfig: DBConfig{Path: path, ReadOnly: true, Driver: testdriver.Driver(),
				knobs: knobs{noFollow: true, afterProbe: migrate}},
				Source: Source{Table: "records", Column: "id"}})
			page := append(ids("never", 40000), tc.asked, "caf\u00e9")
			got, err := ix.Missing(ctx, page)
			if err != nil {
				t.Fatal(err)
			}
			if !got[40000] {
				t.Fatalf("Missing(%q) = false after the migration: never stored, answered fetched", tc.asked)
			}
			if got[40001] {
				t.Fatal("Missing(café) = true: stored, answered missing")
			}
			if _, err := ix.Missing(ctx, []string{tc.asked}); !errors.Is(err, ErrInexactColumn) {
				t.Fatalf("the call after the migration = %v, want ErrInexactColumn", err)
			}
		})
	}
}

// TestColumnRenamedUnderACall: a key column renamed between a call's
// resolution of the source and one of its statements (here its scan for
// stored spellings, which a key of more spellings than a call walks
// needs: eleven K) fails the call with the typed error of a source
// without that column (ErrNoSource), not SQLite's "no such column"; once
// renamed back, calls are answered again.
func TestColumnRenamedUnderACall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, "abc", norm.NFD.String("caf\u00e9"))
	app := rawDB(t, path)
	var once sync.Once
	rename := func() {
		once.Do(func() { mustExec(t, app, `ALTER TABLE records RENAME COLUMN id TO rid`) })
	}
	ix := open(t, config{DBConfig: DBConfig{Path: path, ReadOnly: true, Driver: testdriver.Driver(),
		knobs: knobs{noFollow: true, spellingScan: rename}},
		Source: Source{Table: "records", Column: "id"}})
	_, err := ix.Missing(ctx, []string{"caf\u00e9", "abc", "KKKKKKKKKKK"})
	if !errors.Is(err, ErrNoSource) {
		t.Fatalf("Missing with the key column renamed under it = %v, want ErrNoSource", err)
	}
	mustExec(t, app, `ALTER TABLE records RENAME COLUMN rid TO id`)
	expect(t, ix, set([]string{"abc", "caf\u00e9"}), []string{"caf\u00e9", "abc", "never"})
}

// TestAddColumnKeepsTheResolution: after ALTER TABLE … ADD COLUMN the
// source is bound again as it was resolved (one read of the catalog, not
// a resolution), answers stay exact, and any other change a resolution
// rests on (here the key's index dropped) is resolved again: refused.
func TestAddColumnKeepsTheResolution(t *testing.T) {
	t.Parallel()
	seed := ids("seed", 300)
	path := driftDB(t, "WAL", seed)
	ix := open(t, appConfig(path))
	expectTable(t, ix, path, "records", slices.Concat(ids("seed", 20), ids("never", 20)))
	resolved := ix.k.G.Binding()
	execIn(t, path, "WAL", `ALTER TABLE records ADD COLUMN extra TEXT`, `ALTER TABLE records ADD COLUMN more INTEGER DEFAULT (0)`)
	insertIn(t, path, "WAL", "records", "after", 50)
	expectTable(t, ix, path, "records", slices.Concat(seed, ids("after", 50), ids("never", 50)))
	if ix.k.G.Binding() != resolved {
		t.Fatal("ADD COLUMN: the source was resolved again")
	}
	if st := stats(ix); !st.Serving {
		t.Fatal("ADD COLUMN: no filter serves")
	}
	execIn(t, path, "WAL", `CREATE TABLE records2 (id TEXT, body TEXT, extra TEXT, more INTEGER DEFAULT (0))`,
		`INSERT INTO records2 SELECT * FROM records`, `DROP TABLE records`, `ALTER TABLE records2 RENAME TO records`)
	if _, err := ix.Missing(context.Background(), []string{"seed-0000001"}); !errors.Is(err, ErrNotIndexed) {
		t.Fatalf("after the key's index went: Missing = %v, want ErrNotIndexed", err)
	}
}

// TestMigrationLeftOpenOnThePool: a migration script run as one
// multi-statement Exec on the app's pool fails after its ADD COLUMNs and
// leaves the pool's idle connection inside its transaction; a call runs
// there (the probe on the app's pool) and sees the uncommitted schema;
// the app rolls back, and another process's 12-step rebuild commits the
// same schema cookie the uncommitted one had. A binding never rests on
// what a connection of the app saw uncommitted: rows stored afterwards
// are answered stored.
func TestMigrationLeftOpenOnThePool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := driftDB(t, "WAL", ids("seed", 50))
	app := modeConn(t, path, "WAL")
	cfg := appConfig(path)
	cfg.DB, cfg.Driver = app, nil
	cfg.knobs.noFollow = true
	ix := open(t, cfg)
	waitServing(t, ix)
	page := slices.Concat(ids("seed", 50), ids("never", 20))
	expectTable(t, ix, path, "records", page)
	app.SetMaxOpenConns(1)
	if _, err := app.Exec(`BEGIN; ALTER TABLE records ADD COLUMN a TEXT; ALTER TABLE records ADD COLUMN b TEXT;
		ALTER TABLE records ADD COLUMN c TEXT; INSERT INTO no_such_table VALUES (1); COMMIT;`); err == nil {
		t.Fatal("the script did not fail")
	}
	_, _ = ix.Missing(ctx, page) // inside the app's open transaction: an error or an answer, never a binding
	mustExec(t, app, `ROLLBACK`)
	execIn(t, path, "WAL", `BEGIN`, `CREATE TABLE records_new (id TEXT PRIMARY KEY, body TEXT, a TEXT)`,
		`INSERT INTO records_new (id, body) SELECT id, body FROM records`, `DROP TABLE records`,
		`ALTER TABLE records_new RENAME TO records`, `COMMIT`)
	insertIDs(t, app, ids("after", 20)...)
	_ = ix.Wait(ctx)
	expectTable(t, ix, path, "records", slices.Concat(page, ids("after", 20)))
}

// TestCatalogAfterDDLOnTheAppsPool: after the app's ADD COLUMN, a call
// the app makes reads the catalog on the connection of the app's pool its
// probe ran on, where the driver reports that connection outside any
// transaction (mattn, ncruces); the follower, working while the app runs
// its own statements, reads it on a reader (docs/ARCHITECTURE.md, step
// 4). The catalogRead knob says where each read ran: that is the check.
func TestCatalogAfterDDLOnTheAppsPool(t *testing.T) {
	t.Parallel()
	seed := ids("seed", 300)
	for _, follow := range []bool{false, true} {
		path := driftDB(t, "WAL", seed)
		app := modeConn(t, path, "WAL")
		app.SetMaxOpenConns(2)
		tells := reportsAutocommit(t, app)
		cfg := appConfig(path)
		cfg.DB, cfg.Driver = app, nil
		cfg.knobs.noFollow = !follow
		cfg.knobs.followMin = time.Minute // still following when the DDL commits
		var onApp, onReader atomic.Int64
		cfg.knobs.catalogRead = func(app bool) {
			if app {
				onApp.Add(1)
			} else {
				onReader.Add(1)
			}
		}
		ix := open(t, cfg)
		waitServing(t, ix)
		page := slices.Concat(ids("seed", 20), ids("never", 20))
		expectTable(t, ix, path, "records", page)
		resolved := ix.k.G.Binding()
		onApp.Store(0) // the attach's own DDL was read after too
		onReader.Store(0)
		mustExec(t, app, `ALTER TABLE records ADD COLUMN extra TEXT`)
		if !follow {
			// The app's call alone reads it.
			expectTable(t, ix, path, "records", page)
			if got := onApp.Load() + onReader.Load(); got != 1 {
				t.Fatalf("the call read the catalog %d times after ADD COLUMN (%d on the app's pool), want 1", got, onApp.Load())
			}
			if tells && onApp.Load() != 1 {
				t.Fatal("the call read the catalog on a reader, not on the app's pool")
			}
		} else {
			waitFor(t, "the follower's catalog read", func() bool { return onReader.Load()+onApp.Load() > 0 })
			if n := onApp.Load(); n != 0 {
				t.Fatalf("the follower read the catalog on the app's pool %d times", n)
			}
			insertIDs(t, app, ids("after", 10)...)
			expectTable(t, ix, path, "records", slices.Concat(page, ids("after", 10)))
		}
		if ix.k.G.Binding() != resolved {
			t.Fatal("ADD COLUMN: the source was resolved again")
		}
	}
}

// TestCatalogOnAPoolThatScansBackwards: an app whose connections scan
// tables backwards where no order is asked (PRAGMA
// reverse_unordered_selects, SQLite's aid for finding code that relies on
// an order) reads the catalog on its pool in the other direction from a
// reader of the library's. Both reads agree: ADD COLUMN keeps the source
// as resolved.
func TestCatalogOnAPoolThatScansBackwards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 100)
	path := driftDB(t, "WAL", seed)
	app := modeConn(t, path, "WAL")
	app.SetMaxOpenConns(2)
	app.SetMaxIdleConns(2)
	var conns []*sql.Conn
	for range 2 {
		c, err := app.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(ctx, `PRAGMA reverse_unordered_selects = ON`); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		_ = c.Close()
	}
	cfg := appConfig(path)
	cfg.DB, cfg.Driver = app, nil
	cfg.knobs.noFollow = true
	ix := open(t, cfg)
	waitServing(t, ix)
	page := slices.Concat(ids("seed", 20), ids("never", 20))
	expectTable(t, ix, path, "records", page)
	resolved := ix.k.G.Binding()
	mustExec(t, app, `ALTER TABLE records ADD COLUMN extra TEXT`)
	expectTable(t, ix, path, "records", page)
	if ix.k.G.Binding() != resolved {
		t.Fatal("ADD COLUMN on a pool that scans backwards: the source was resolved again")
	}
}

// TestProbeInsideTheAppsTransactionAfterDDL: a call's probe that runs on
// a connection the app left inside a transaction (a raw BEGIN on its
// pool) reads that transaction's schema cookie. Here the transaction
// renamed the key column and added one under its old name; the app then
// rolls it back and another connection commits two ADD COLUMNs, which
// bring the committed cookie to the same value, with only columns
// appended. A cookie read inside a transaction says nothing about the
// committed schema: the call must not keep the answers of a probe whose
// cookie moved, and every stored id stays stored.
func TestProbeInsideTheAppsTransactionAfterDDL(t *testing.T) {
	t.Parallel()
	seed := ids("seed", 50)
	path := driftDB(t, "WAL", seed)
	app := modeConn(t, path, "WAL")
	app.SetMaxOpenConns(1)
	other := modeConn(t, path, "WAL")
	cfg := appConfig(path)
	cfg.DB, cfg.Driver = app, nil
	cfg.knobs.noFollow = true
	var armed atomic.Bool
	hookErr := make(chan error, 1)
	cfg.knobs.afterProbe = func() {
		if !armed.CompareAndSwap(true, false) {
			return
		}
		_, err := app.Exec(`ROLLBACK`)
		if err == nil {
			_, err = other.Exec(`ALTER TABLE records ADD COLUMN a TEXT; ALTER TABLE records ADD COLUMN b TEXT`)
		}
		hookErr <- err
	}
	ix := open(t, cfg)
	waitServing(t, ix)
	page := slices.Concat(seed[:20], ids("never", 5))
	expectTable(t, ix, path, "records", page)
	mustExec(t, app, `BEGIN; ALTER TABLE records RENAME COLUMN id TO old; ALTER TABLE records ADD COLUMN id TEXT`)
	armed.Store(true)
	missing, err := ix.Missing(context.Background(), page)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-hookErr:
		if err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatal("no probe ran on the app's pool: the test shows nothing")
	}
	for i, m := range missing {
		if m != (i >= 20) {
			t.Errorf("%q missing: %v", page[i], m)
		}
	}
	expectTable(t, ix, path, "records", page)
}

// reportsAutocommit reports whether the driver connections of db say
// whether they are inside a transaction, as store.AppCatalog asks them.
func reportsAutocommit(t testing.TB, db *sql.DB) bool {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tells := false
	if err := conn.Raw(func(dc any) error {
		switch dc.(type) {
		case interface{ AutoCommit() bool }, interface{ GetAutocommit() bool }:
			tells = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return tells
}
