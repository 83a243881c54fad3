package rebuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/snapshot"
	"golang.org/x/text/unicode/norm"
)

// Identity of the database file: the file at Path replaced while an index
// is open, a second name (hard link), a relative Path and a chdir, a
// symbolic link with stale files beside it.

func init() {
	// recreate: path, mode, how ("delete" or "rename"), prefix, n: the
	// app clears its data: the database at path is deleted (with the files
	// SQLite keeps beside it) and created again holding n new ids, or a
	// new database is renamed over it (its -wal and -shm removed first).
	childActs["recreate"] = func(t *testing.T, args []string) {
		path, mode, how, prefix := args[0], args[1], args[2], args[3]
		n, err := strconv.Atoi(args[4])
		if err != nil {
			t.Fatal(err)
		}
		build := path
		if how == "rename" {
			build = path + ".new"
		}
		if how == "delete" {
			for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
				if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
			}
		}
		db := modeConn(t, build, mode)
		db.SetMaxOpenConns(1)
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids(prefix, n) {
			if _, err := tx.Exec(`INSERT INTO records (id) VALUES (?)`, id); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if how == "rename" {
			if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			// The old database's files go first: beside the new file they
			// would be read as its own.
			for _, suffix := range []string{"-wal", "-shm"} {
				_ = os.Remove(build + suffix)
				_ = os.Remove(path + suffix)
			}
			if err := os.Rename(build, path); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRecreatedWhileOpen: another process deletes the database and
// creates it again with other rows (or renames a new database over it)
// while goroutines ask Missing and Fetched without pause (run it with
// -race). Every answer is exactly the old file's or the new file's, or
// an error while no complete file is at the path; every call that starts
// after the new file is complete answers exactly about it. Then the
// source is attached and rebuilt there, rows written later are fetched,
// and the new file is intact.
func TestRecreatedWhileOpen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ mode, how string }{
		{"WAL", "delete"}, {"DELETE", "delete"}, {"WAL", "rename"},
	} {
		t.Run(tc.mode+"/"+tc.how, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			old := ids("old", 300)
			path := driftDB(t, tc.mode, old)
			cfg := appConfig(path)
			cfg.Readers = 3
			ix := open(t, cfg)
			renewed := ids("new", 200)
			probe := slices.Concat(old[:100], renewed[:100], ids("never", 100))
			wantOld, wantNew := missingOf(probe, set(old)), missingOf(probe, set(renewed))

			var swapped atomic.Bool
			var after, errs, oldAnswers atomic.Int64
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						done := swapped.Load()
						var got []string
						var err error
						fetched := (g+i)%2 == 1
						k := probe[(g*31+i*7)%len(probe)]
						if fetched {
							// One key per call: each call is about one file.
							var ok bool
							if ok, err = ix.Fetched(ctx, k); err == nil && !ok {
								got = []string{k}
							}
						} else {
							got, err = missingList(ctx, ix, probe)
						}
						newAnswer, oldAnswer := wantNew, wantOld
						if fetched {
							newAnswer, oldAnswer = missingOf([]string{k}, set(renewed)), missingOf([]string{k}, set(old))
						}
						switch {
						case err != nil && done:
							t.Errorf("a call after the new file was in place: %v", err)
							return
						case err != nil:
							if !errors.Is(err, ErrReplaced) && !errors.Is(err, ErrNoSource) {
								t.Errorf("a call during the replacement: %v (want ErrReplaced or ErrNoSource)", err)
								return
							}
							errs.Add(1)
						case slices.Equal(got, newAnswer):
						case slices.Equal(got, oldAnswer) && !done:
							oldAnswers.Add(1)
						default:
							t.Errorf("after=%v, fetched=%v: an answer of %d missing keys, neither the old file's (%d) nor the new one's (%d): %.100q",
								done, fetched, len(got), len(oldAnswer), len(newAnswer), got)
							return
						}
						if done {
							after.Add(1)
						}
					}
				}()
			}
			waitFor(t, "answers before the replacement", func() bool { return stats(ix).Queries > 2000 || t.Failed() })
			child(t, "recreate", path, tc.mode, tc.how, "new", strconv.Itoa(len(renewed)))
			swapped.Store(true)
			waitFor(t, "answers after the replacement", func() bool { return after.Load() >= 200 || t.Failed() })
			close(stop)
			wg.Wait()
			if t.Failed() {
				return
			}
			t.Logf("answers from the old file %d, errors during the replacement %d, answers after %d", oldAnswers.Load(), errs.Load(), after.Load())

			waitServing(t, ix)
			if st := stats(ix); !st.Serving || !st.Attached {
				t.Fatalf("on the new file: serving %v, attached %v, last error %v", st.Serving, st.Attached, st.LastError)
			}
			t.Logf("snapshot error on the new file: %v", stats(ix).SnapshotError)
			later := insertIn(t, path, tc.mode, "records", "later", 50)
			probe = append(probe, later...)
			exact(t, ix, tableIDs(t, path, "records"), probe)
			if err := ix.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if got := tableIDs(t, path, "records"); len(got) != len(renewed)+len(later) {
				t.Fatalf("the new file holds %d rows, want %d", len(got), len(renewed)+len(later))
			}
			integrity(t, path)
			if got := journalMode(t, path); !equalFold(got, tc.mode) {
				t.Fatalf("journal mode %s, want %s", got, tc.mode)
			}
			// The next open serves the new file exactly.
			again := open(t, cfg)
			t.Logf("reopen: serving %v, snapshot error %v", stats(again).Serving, stats(again).SnapshotError)
			waitServing(t, again)
			exact(t, again, tableIDs(t, path, "records"), probe)
		})
	}
}

func equalFold(a, b string) bool { return bytes.EqualFold([]byte(a), []byte(b)) }

// snapshotRecords returns the database's records of snapshots and scan
// leases, as text.
func snapshotRecords(t testing.TB, path string) string {
	t.Helper()
	db := plainDB(t, path)
	defer db.Close()
	var recs, leases string
	if err := db.QueryRow(`SELECT coalesce(group_concat(hex(checksum) || ':' || generation, ','), '') FROM (SELECT * FROM syncfilter_snapshots ORDER BY checksum)`).Scan(&recs); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT coalesce(group_concat(hex(token) || ':' || expires, ','), '') FROM (SELECT * FROM syncfilter_scans ORDER BY token)`).Scan(&leases); err != nil {
		t.Fatal(err)
	}
	return recs + " | " + leases
}

// TestHardLinkWhileAnotherProcessWrites: a second name appears for the
// database while an index is open, and another process writes rows
// through it (SQLite keeps a journal or a WAL and wal-index beside each
// name). Every call fails with ErrHardLinked instead of answering; the
// library writes nothing through its name meanwhile (no save, no record,
// no lease, the snapshot file untouched, Close included); once the app
// folded the other name's WAL in and removed the name, the index answers
// exactly, the rows written through the other name included (the same
// index in DELETE mode; in WAL mode one opened after every connection
// through the first name closed, see below), and the database is intact.
func TestHardLinkWhileAnotherProcessWrites(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"WAL", "DELETE"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			seed := ids("seed", 300)
			path := driftDB(t, mode, seed)
			cfg := appConfig(path)
			ix := open(t, cfg)
			pre := insertIn(t, path, mode, "records", "pre", 20) // the filter now covers more than the file: Close would save
			probe := slices.Concat(seed, pre, ids("child", 100), ids("never", 100))
			exact(t, ix, tableIDs(t, path, "records"), probe)
			snap, records := fileSum(t, cfg.Snapshot), snapshotRecords(t, path)

			// The app's WAL folded into the file first: in WAL mode, pages
			// committed through one name and not yet checkpointed would
			// shadow pages committed through the other (a corruption no
			// library can undo).
			execIn(t, path, mode, `PRAGMA wal_checkpoint(TRUNCATE)`)
			hard := filepath.Join(t.TempDir(), "hard.db")
			if err := os.Link(path, hard); err != nil {
				t.Fatal(err)
			}
			insertIn(t, hard, mode, "records", "child", 100)
			refused := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, ErrHardLinked) {
					t.Fatalf("%s with a second name = %v, want ErrHardLinked", what, err)
				}
			}
			_, err := ix.Fetched(ctx, "child-0000000")
			refused("Fetched", err)
			_, err = missingList(ctx, ix, probe)
			refused("Missing", err)
			refused("Rebuild", ix.Rebuild(ctx))
			refused("Save", ix.Save(ctx))
			refused("Reload", ix.k.Reload(ctx))
			if fileSum(t, cfg.Snapshot) != snap {
				t.Fatal("the library saved a snapshot while the database had two names")
			}
			if mode == "DELETE" {
				if got := snapshotRecords(t, path); got != records {
					t.Fatalf("the library wrote while the database had two names: records %s, were %s", got, records)
				}
			}

			if mode == "WAL" {
				// In WAL mode the commits through the other name went to its
				// own WAL and wal-index: every connection through this name
				// (the index's, the app's) keeps a view of the file that
				// does not know them until all of them close. The app closes
				// the index before it repairs; Close writes nothing either,
				// and says why its save was refused.
				if err := ix.Close(ctx); !errors.Is(err, ErrHardLinked) {
					t.Fatalf("Close with a second name = %v, want ErrHardLinked (its save refused)", err)
				}
				if fileSum(t, cfg.Snapshot) != snap {
					t.Fatal("Close saved the snapshot while the database had two names")
				}
			}
			// The app repairs: the other name's WAL folded in (by a process
			// that opens the database under that name alone), the name
			// removed.
			execIn(t, hard, mode, `PRAGMA wal_checkpoint(TRUNCATE)`)
			for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
				_ = os.Remove(hard + suffix)
			}
			if mode == "WAL" {
				if got := snapshotRecords(t, path); got != records {
					t.Fatalf("the library wrote while the database had two names: records %s, were %s", got, records)
				}
				ix = open(t, cfg)
			}
			want := tableIDs(t, path, "records")
			if !want["child-0000099"] {
				t.Fatal("the rows written through the other name are not in the database")
			}
			exact(t, ix, want, probe)
			later := insertIn(t, path, mode, "records", "later", 20)
			probe = append(probe, later...)
			exact(t, ix, tableIDs(t, path, "records"), probe)
			if err := ix.Close(ctx); err != nil {
				t.Fatal(err)
			}
			integrity(t, path)
			again := open(t, cfg)
			exact(t, again, tableIDs(t, path, "records"), probe)
		})
	}
}

func init() {
	// chdir: dirA, dirB. Opens dirA/app.db by a relative path from dirA,
	// moves to dirB (which holds another app.db), then asks from many
	// goroutines so that the pool opens new connections, rebuilds, and
	// closes; every answer must be about dirA/app.db.
	childActs["chdir"] = func(t *testing.T, args []string) {
		ctx := context.Background()
		dirA, dirB := args[0], args[1]
		if err := os.Chdir(dirA); err != nil {
			t.Fatal(err)
		}
		ix, err := Open(ctx, DBConfig{Path: "app.db", Readers: 8, Driver: testdriver.Driver()}, Source{Table: "records", Column: "id", Snapshot: "app.db.sfb", NotWhenDue: true})
		if err != nil {
			t.Fatal(err)
		}
		realA := filepath.Join(dirA, "app.db")
		if err := os.Chdir(dirB); err != nil {
			t.Fatal(err)
		}
		probe := slices.Concat(ids("a", 300), ids("b", 300), ids("later", 50), ids("never", 100))
		before, _ := openFiles(t, realA)
		// Every reading connection the pool may hold, taken at once: the
		// pool opens the ones it lacks now, after the chdir; released in
		// order, the new ones are handed out first.
		st := ix.db.bg.Files.Current().St
		var held []*store.Conn
		for range 8 {
			c, err := st.Reader(ctx)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		for _, c := range held {
			st.Release(c)
		}
		want := missingOf(probe, tableIDs(t, realA, "records"))
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 20 {
					if (g+i)%2 == 0 {
						got, err := missingList(ctx, ix, probe)
						if err != nil || !slices.Equal(got, want) {
							t.Errorf("after chdir: Missing = %d keys %.60q, %v; want %d", len(got), got, err, len(want))
							return
						}
						continue
					}
					k := probe[(g*37+i*11)%len(probe)]
					got, err := ix.Fetched(ctx, k)
					if err != nil || got == slices.Contains(want, k) {
						t.Errorf("after chdir: Fetched(%s) = %v, %v", k, got, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		after, _ := openFiles(t, realA)
		fmt.Printf("open files on the database: %d before, %d after\n", before, after)
		if after <= before {
			t.Errorf("the pool opened no new connection after the chdir (%d files open on the database before, %d after)", before, after)
		}
		insertInto(t, modeConn(t, realA, ""), "records", ids("later", 50)...)
		exact(t, ix, tableIDs(t, realA, "records"), probe)
		if err := ix.Rebuild(ctx); err != nil {
			t.Fatal(err)
		}
		if st := stats(ix); st.Items != 350 {
			t.Errorf("Rebuild after chdir inserted %d keys, want the 350 rows of %s", st.Items, realA)
		}
		insertInto(t, modeConn(t, realA, ""), "records", "a-after-rebuild")
		if ok, err := ix.Fetched(ctx, "a-after-rebuild"); !ok || err != nil { // caught up: Close saves
			t.Fatalf("Fetched = %v, %v", ok, err)
		}
		gen := stats(ix).Generation
		if err := ix.Close(ctx); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("generation %d\n", gen)
	}
}

// TestRelativePathAndChdir: an index opened with a relative Path and a
// relative Snapshot, in a process that then changes its directory to one
// holding another app.db (run in a child process: chdir is process-wide).
// New pool connections, answers, Rebuild and Close's save are all about
// the database first resolved; nothing is created or changed in the new
// directory.
func TestRelativePathAndChdir(t *testing.T) {
	t.Parallel()
	dirA, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dirB := t.TempDir()
	pathA, pathB := filepath.Join(dirA, "app.db"), filepath.Join(dirB, "app.db")
	app := plainDB(t, pathA)
	mustExec(t, app, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`)
	insertIDs(t, app, ids("a", 300)...)
	_ = app.Close()
	other := plainDB(t, pathB)
	mustExec(t, other, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`)
	insertIDs(t, other, ids("b", 300)...)
	_ = other.Close()
	entriesB, sumB, schemaB := dirEntries(t, dirB), fileSum(t, pathB), schema(t, pathB)

	out := child(t, "chdir", dirA, dirB)
	t.Log(strings.TrimSpace(out))
	var gen uint64
	if _, err := fmt.Sscanf(out[strings.Index(out, "generation "):], "generation %d", &gen); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}

	if got := dirEntries(t, dirB); !slices.Equal(got, entriesB) {
		t.Fatalf("files in the new directory: %v, were %v", got, entriesB)
	}
	if fileSum(t, pathB) != sumB || !bytes.Equal(schema(t, pathB), schemaB) {
		t.Fatal("the other directory's app.db changed")
	}
	// Close saved the filter (the rebuild's rows and the one written
	// after it) beside the database first resolved.
	ix := open(t, config{DBConfig: DBConfig{Path: pathA, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: filepath.Join(dirA, "app.db.sfb")}})
	claim, err := snapshot.ReadClaim(filepath.Join(dirA, "app.db.sfb"))
	if err != nil {
		t.Fatal(err)
	}
	if st := stats(ix); !st.Serving || st.SnapshotError != nil || st.Rebuilds != 0 || claim.Generation < gen {
		t.Fatalf("the snapshot saved by Close: serving %v, %d rebuilds, generation %d (child's filter at %d), error %v", st.Serving, st.Rebuilds, claim.Generation, gen, st.SnapshotError)
	}
	exact(t, ix, tableIDs(t, pathA, "records"), slices.Concat(ids("a", 300), ids("b", 300), ids("later", 50), []string{"a-after-rebuild"}, ids("never", 100)))
}

// TestSymlinkWithStaleFilesBesideIt: the database is opened through a
// symbolic link in another directory, beside which lie a stale -shm and
// -wal (copies of another database's, left by an old setup). Rows
// committed by another process through the real path are fetched; the
// other database's rows never are; the files beside the link are never
// read, changed or joined by new ones (but the snapshot configured
// there).
func TestSymlinkWithStaleFilesBesideIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 300)
	real := driftDB(t, "WAL", seed)
	// Another database's live WAL and wal-index, copied while open.
	ghostPath := driftDB(t, "WAL", nil)
	ghost := modeConn(t, ghostPath, "WAL")
	mustExec(t, ghost, `PRAGMA wal_autocheckpoint = 0`)
	insertInto(t, ghost, "records", ids("ghost", 200)...)
	linkDir := t.TempDir()
	link := filepath.Join(linkDir, "app.db")
	for _, suffix := range []string{"-wal", "-shm"} {
		b := readFile(t, ghostPath+suffix)
		if err := os.WriteFile(link+suffix, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_ = ghost.Close()
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	staleWal, staleShm := fileSum(t, link+"-wal"), fileSum(t, link+"-shm")

	cfg := config{DBConfig: DBConfig{Path: link, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: filepath.Join(linkDir, "app.sfb")}}
	ix := open(t, cfg)
	probe := slices.Concat(seed, ids("ghost", 200), ids("later", 100), ids("never", 100))
	exact(t, ix, tableIDs(t, real, "records"), probe)
	insertIn(t, real, "WAL", "records", "later", 100)
	want := tableIDs(t, real, "records")
	if !want["later-0000099"] || want["ghost-0000000"] {
		t.Fatal("the reference is not what the test wrote")
	}
	exact(t, ix, want, probe)
	if err := ix.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	insertIn(t, real, "WAL", "records", "later2", 10)
	probe = append(probe, ids("later2", 10)...)
	exact(t, ix, tableIDs(t, real, "records"), probe)
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	again := open(t, cfg)
	if st := stats(again); !st.Serving || st.SnapshotError != nil {
		t.Fatalf("reopen through the link: serving %v, snapshot error %v", st.Serving, st.SnapshotError)
	}
	exact(t, again, tableIDs(t, real, "records"), probe)
	if err := again.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := BuildSnapshot(ctx, cfg.DBConfig, cfg.Source); err != nil {
		t.Fatal(err)
	}
	if err := Detach(ctx, DBConfig{Path: link, Driver: testdriver.Driver()}, "records", "id"); err != nil {
		t.Fatal(err)
	}
	if objs := libraryObjects(t, real); len(objs) != 0 {
		t.Fatalf("after Detach through the link: %q", objs)
	}
	if fileSum(t, link+"-wal") != staleWal || fileSum(t, link+"-shm") != staleShm {
		t.Fatal("the stale files beside the link changed")
	}
	if got := dirEntries(t, linkDir); fmt.Sprint(got) != "[app.db app.db-shm app.db-wal app.sfb]" {
		t.Fatalf("files beside the link: %v", got)
	}
	integrity(t, real)
}

// TestSymlinkRepointedWhileOpen: the app's Path is a symbolic link, and
// the app points it at another database while an index is open (a new
// link renamed over the old one). The next call answers about the file
// the link names now; the file it named before is left alone.
func TestSymlinkRepointedWhileOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	first := driftDB(t, "WAL", ids("first", 200))
	second := driftDB(t, "DELETE", ids("second", 150))
	dir := t.TempDir()
	link := filepath.Join(dir, "app.db")
	if err := os.Symlink(first, link); err != nil {
		t.Fatal(err)
	}
	cfg := config{DBConfig: DBConfig{Path: link, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: filepath.Join(dir, "app.sfb")}}
	ix := open(t, cfg)
	probe := slices.Concat(ids("first", 200), ids("second", 150), ids("later", 20), ids("never", 50))
	exact(t, ix, tableIDs(t, first, "records"), probe)
	if err := os.Symlink(second, link+".new"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(link+".new", link); err != nil {
		t.Fatal(err)
	}
	schemaFirst := schema(t, first)
	exact(t, ix, tableIDs(t, second, "records"), probe)
	insertIn(t, second, "DELETE", "records", "later", 20)
	exact(t, ix, tableIDs(t, second, "records"), probe)
	waitServing(t, ix)
	exact(t, ix, tableIDs(t, second, "records"), probe)
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(schema(t, first), schemaFirst) {
		t.Fatal("the database the link named before changed")
	}
	if got := headerMode(t, second); got != "rollback" {
		t.Fatalf("the second database is in %s mode now", got)
	}
	integrity(t, first)
	integrity(t, second)
}

// TestHardLinkedDatabaseIsRefused: a database file with a second name is
// refused before anything is written (SQLite would keep a journal beside
// each name); a second name appearing while an index is open makes every
// call fail with the same error instead of answering.
func TestHardLinkedDatabaseIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, "seed")
	before := schema(t, path)
	hard := filepath.Join(t.TempDir(), "hard.db")
	if err := os.Link(path, hard); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, hard} {
		if _, err := Open(ctx, appConfig(p).DBConfig, appConfig(p).Source); !errors.Is(err, ErrHardLinked) {
			t.Fatalf("Open(%s) = %v, want ErrHardLinked", p, err)
		}
		if _, err := BuildSnapshot(ctx, appConfig(p).DBConfig, appConfig(p).Source); !errors.Is(err, ErrHardLinked) {
			t.Fatalf("BuildSnapshot(%s) = %v, want ErrHardLinked", p, err)
		}
	}
	if !bytes.Equal(schema(t, path), before) {
		t.Fatal("a refused open changed the schema")
	}
	if err := os.Remove(hard); err != nil {
		t.Fatal(err)
	}
	ix := open(t, appConfig(path))
	if err := os.Link(path, hard); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Fetched(ctx, "seed"); !errors.Is(err, ErrHardLinked) {
		t.Fatalf("Fetched with a second name = %v, want ErrHardLinked", err)
	}
	if _, err := missingList(ctx, ix, []string{"seed", "new"}); !errors.Is(err, ErrHardLinked) {
		t.Fatalf("Missing with a second name = %v, want ErrHardLinked", err)
	}
	if err := os.Remove(hard); err != nil {
		t.Fatal(err)
	}
	expect(t, ix, set([]string{"seed"}), []string{"seed", "new"})
}

// TestSymlinkedPathWithAStaleShmStaysFresh: the app opens its database
// through a symbolic link, beside which lies a stale -shm file (left by
// an old process that opened the link's name). Rows another connection
// commits through the real path are seen by the next call, by Fetched
// and by Missing, in both spellings.
func TestSymlinkedPathWithAStaleShmStaysFresh(t *testing.T) {
	t.Parallel()
	real := modeDB(t, "wal", []string{"records"}, ids("seed", 200)...)
	dir := t.TempDir()
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	stale := make([]byte, 32<<10)
	for i := range stale {
		stale[i] = byte(i * 7)
	}
	if err := os.WriteFile(link+"-shm", stale, 0o600); err != nil {
		t.Fatal(err)
	}
	ix := open(t, config{DBConfig: DBConfig{Path: link, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: filepath.Join(dir, "link.sfb")}})
	app := modeConn(t, real, "wal")
	fetched := set(ids("seed", 200))
	for round := range 4 {
		nfc := fmt.Sprintf("Ångström-link-%d", round)
		insertInto(t, app, "records", norm.NFD.String(nfc), fmt.Sprintf("plain-link-%d", round))
		fetched[nfc], fetched[norm.NFD.String(nfc)], fetched[fmt.Sprintf("plain-link-%d", round)] = true, true, true
		expect(t, ix, fetched, []string{nfc, fmt.Sprintf("plain-link-%d", round), norm.NFD.String(nfc), "seed-0000007", fmt.Sprintf("never-link-%d", round)})
	}
}

// TestReplacedByACopyWithTriggers: a copy of the database, the library's
// triggers and tables in it, renamed over the path while the index is
// open (a restore by rename). The old file's filter covers nothing of the
// new file: it is dropped and a filter of the new file is built, every
// call meanwhile answered from SQLite, promptly, for keys of every
// spelling.
func TestReplacedByACopyWithTriggers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("old", 200)...)
	ix := open(t, appConfig(path))
	waitServing(t, ix)
	if err := checkpoint(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := path + ".copy"
	if err := os.WriteFile(cp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, cp)
	insertIDs(t, db, "added-1", "café-1")
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, s := range []string{"-wal", "-shm"} {
		_ = os.Remove(cp + s)
	}
	if err := os.Rename(cp, path); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	page := []string{"added-1", "cafe\u0301-1", "naïve", "old-0000001", "nope"}
	want := []string{"naïve", "nope"}
	for _, step := range []string{"first call", "after Wait"} {
		got, err := missingList(tctx, ix, page)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("%s: missing %q, %v; want %q", step, got, err, want)
		}
		if step == "first call" {
			if err := ix.Wait(tctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	v := serving(ix)
	if v == nil || v.File.N != ix.db.bg.Files.Current().N {
		t.Fatalf("no filter of the new file serves: %+v", v)
	}
}
