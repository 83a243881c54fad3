package rebuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// The journal mode is the app's: the library never sets it, and every
// path works in each mode, with an app whose every connection sets its
// mode in the DSN.

// appConn opens a NEW connection of the app (its DSN sets the mode),
// runs a statement on it and reports the mode it got; a database left in
// another mode by someone else makes this fail ("database is locked")
// while other connections are open.
func appConn(t testing.TB, path, mode string) string {
	t.Helper()
	db := modeConn(t, path, mode)
	defer db.Close()
	var got string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&got); err != nil {
		t.Fatalf("a new connection of the app (DSN _journal_mode=%s): %v", mode, err)
	}
	if _, err := db.Exec(`INSERT INTO records (id) VALUES ('conn-probe') ON CONFLICT DO NOTHING`); err != nil {
		t.Fatalf("a new connection of the app writes: %v", err)
	}
	return got
}

// TestEveryJournalMode: for each journal mode, an app whose every
// connection sets it in its DSN: the first attach and scan, catch-up on
// rows another process commits, confirmation, a compacting rebuild, Save,
// a reopen from the snapshot, Close and Detach all work, the app opens
// new connections in between (no "database is locked"), the mode is the
// app's at every step, and every answer is exact.
func TestEveryJournalMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, mode := range []string{"DELETE", "TRUNCATE", "PERSIST", "WAL"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			want := strings.ToLower(mode)
			wantHeader := "rollback"
			if mode == "WAL" {
				wantHeader = "wal"
			}
			path := filepath.Join(t.TempDir(), "app.db")
			app := modeConn(t, path, mode)
			mustExec(t, app, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`)
			seed := ids("seed", 500)
			insertIDs(t, app, seed...)
			pristine := schema(t, path)
			step := func(name string) {
				t.Helper()
				if got := headerMode(t, path); got != wantHeader {
					t.Fatalf("%s: the database is in %s mode, the app's is %s", name, got, mode)
				}
				if got := appConn(t, path, mode); got != want {
					t.Fatalf("%s: a new app connection is in mode %s, want %s", name, got, want)
				}
			}
			step("before")

			cfg := appConfig(path)
			cfg.LogRetain = 5
			ix := open(t, cfg)
			step("after the first attach")
			probe := slices.Concat(seed, ids("child", 200), ids("app", 100), ids("never", 200), []string{"conn-probe"})
			exact(t, ix, tableIDs(t, path, "records"), probe)

			insertIn(t, path, mode, "records", "child", 200) // another process
			step("after another process wrote")
			exact(t, ix, tableIDs(t, path, "records"), probe)
			insertIDs(t, app, ids("app", 100)...) // the app's pooled connection
			exact(t, ix, tableIDs(t, path, "records"), probe)

			if err := ix.Rebuild(ctx); err != nil { // saves, then compacts the log to LogRetain entries
				t.Fatal(err)
			}
			step("after the rebuild")
			var logRows int
			if err := app.QueryRow(`SELECT count(*) FROM syncfilter_log_1`).Scan(&logRows); err != nil {
				t.Fatal(err)
			}
			if logRows > int(cfg.LogRetain) {
				t.Fatalf("the log holds %d entries after the compacting rebuild, want at most %d", logRows, cfg.LogRetain)
			}
			insertIn(t, path, mode, "records", "late", 20)
			probe = append(probe, ids("late", 20)...)
			exact(t, ix, tableIDs(t, path, "records"), probe)
			if err := ix.Save(ctx); err != nil {
				t.Fatal(err)
			}
			step("after Save")
			if err := ix.Close(ctx); err != nil {
				t.Fatal(err)
			}
			step("after Close")

			again := open(t, cfg)
			if st := stats(again); !st.Serving || st.SnapshotError != nil {
				t.Fatalf("reopen: serving %v, snapshot error %v", st.Serving, st.SnapshotError)
			}
			step("after the reopen")
			exact(t, again, tableIDs(t, path, "records"), probe)
			if _, err := BuildSnapshot(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, Source{Table: "records", Column: "id", Snapshot: path + ".cron.sfb"}); err != nil {
				t.Fatal(err)
			}
			step("after BuildSnapshot")
			if err := again.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "id"); err != nil {
				t.Fatal(err)
			}
			step("after Detach")
			if got := schema(t, path); !bytes.Equal(got, pristine) {
				t.Fatalf("schema after Detach:\n%s\nwant\n%s", got, pristine)
			}
			integrity(t, path)
		})
	}
}

// TestBackupByCopyingTheFile: an app in DELETE mode backs up by copying
// app.db alone while an index is open and idle (after it attached,
// caught up and saved): the copy holds every committed row and is a
// sound database.
func TestBackupByCopyingTheFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "app.db")
	app := modeConn(t, path, "DELETE")
	mustExec(t, app, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`)
	insertIDs(t, app, ids("seed", 400)...)
	ix := open(t, appConfig(path))
	insertIn(t, path, "DELETE", "records", "child", 300)
	insertIDs(t, app, ids("app", 300)...)
	probe := slices.Concat(ids("seed", 400), ids("child", 300), ids("app", 300), ids("never", 100))
	exact(t, ix, tableIDs(t, path, "records"), probe)
	if err := ix.Save(ctx); err != nil {
		t.Fatal(err)
	}
	committed := tableIDs(t, path, "records")

	b := readFile(t, path)
	backup := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(backup, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := tableIDs(t, backup, "records"); len(got) != len(committed) {
		t.Fatalf("the copy of app.db holds %d of %d committed rows", len(got), len(committed))
	}
	integrity(t, backup)
	if _, err := os.Stat(path + "-wal"); !os.IsNotExist(err) {
		t.Fatalf("a -wal file beside the database: %v", err)
	}
	// The backup restored is a database the index opens and answers from.
	restored := open(t, config{DBConfig: DBConfig{Path: backup, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: backup + ".sfb"}})
	exact(t, restored, committed, probe)
}

func init() {
	// hotjournal: path, mode. A writer that dies in the middle of a
	// transaction: pages spilled to the database file, the journal left
	// hot. Prints "ready" and waits to be killed.
	childActs["hotjournal"] = func(t *testing.T, args []string) {
		db := modeConn(t, args[0], args[1])
		db.SetMaxOpenConns(1)
		mustExec(t, db, `PRAGMA cache_size = 5`)
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids("dead", 2000) {
			if _, err := tx.Exec(`INSERT INTO records (id, body) VALUES (?, hex(randomblob(200)))`, id); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Println("ready")
		time.Sleep(time.Minute)
	}
}

// TestHotJournalOfACrashedWriter: in each rollback mode, another process
// dies in the middle of a transaction that had spilled pages to the
// database file, leaving a hot journal, while an index is open or before
// one is opened. The index (its reading connections are read-only) has it
// rolled back and answers exactly: the dead transaction's rows missing,
// the committed ones fetched.
func TestHotJournalOfACrashedWriter(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"DELETE", "TRUNCATE", "PERSIST"} {
		for _, openFirst := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/open-during-the-crash=%v", mode, openFirst), func(t *testing.T) {
				t.Parallel()
				seed := ids("seed", 300)
				path := driftDB(t, mode, seed)
				probe := slices.Concat(seed, ids("dead", 2000), ids("never", 100))
				// No follower: no read of the index's between the crash
				// and the check that the journal is hot (a read rolls it
				// back); the calls after it have it rolled back.
				cfg := appConfig(path)
				cfg.knobs.noFollow = true
				ix := open(t, cfg) // attached, and a snapshot saved
				exact(t, ix, set(seed), probe)
				if !openFirst {
					if err := ix.Close(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				cmd, lines, stderr := streamChild(t, filepath.Dir(path), "hotjournal", path, mode)
				waitLine(t, lines, "ready")
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				_ = cmd.Wait()
				if info, err := os.Stat(path + "-journal"); err != nil || info.Size() == 0 {
					t.Fatalf("no hot journal after the crash: %v (%s)", err, stderr)
				}
				if !openFirst {
					ix = open(t, cfg) // before any other connection reads
				}
				exact(t, ix, set(seed), probe)
				if _, err := os.Stat(path + "-journal"); mode == "DELETE" && !os.IsNotExist(err) {
					t.Fatalf("the hot journal is still there: %v", err)
				}
				if got := tableIDs(t, path, "records"); len(got) != len(seed) {
					t.Fatalf("the table holds %d rows after the rollback, want %d", len(got), len(seed))
				}
				integrity(t, path)
				insertIn(t, path, mode, "records", "after", 20)
				probe = append(probe, ids("after", 20)...)
				exact(t, ix, tableIDs(t, path, "records"), probe)
			})
		}
	}
}

// TestALockIsNotTakenForAMigration: in a rollback-journal mode, a call
// made while another connection holds the database's exclusive lock (a
// write transaction that spilled to the file, perhaps the caller's own)
// fails with SQLite's lock error once the busy timeout is spent, and that
// error is not taken for a sign of DDL: the call does not read the schema
// to find out (which would wait the busy timeout again, once per layer
// that asks).
func TestALockIsNotTakenForAMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := modeDB(t, "DELETE", []string{"records"}, ids("seed", 200)...)
	cfg := appConfig(path)
	cfg.BusyTimeout = 100 * time.Millisecond
	ix := open(t, cfg)
	app := modeConn(t, path, "DELETE")
	pristine, files := schema(t, path), dirEntries(t, filepath.Dir(path))
	conn, err := app.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	_, lockErr := ix.Missing(ctx, append(ids("seed", 10), "never"))
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if !store.LockHeld(lockErr) {
		t.Fatalf("Missing while another connection holds the exclusive lock = %v, want SQLite's lock error", lockErr)
	}
	// The failed call left no trace: the schema and the files as they
	// were, and the app writes on.
	if got := schema(t, path); !bytes.Equal(got, pristine) {
		t.Fatalf("sqlite_master after the failed call:\n%s", got)
	}
	if got := dirEntries(t, filepath.Dir(path)); !slices.Equal(got, files) {
		t.Fatalf("files after the failed call: %v, were %v", got, files)
	}
	insertInto(t, app, "records", "after")
	expect(t, ix, set(ids("seed", 200), []string{"after"}), append(ids("seed", 10), "never", "after"))
}
