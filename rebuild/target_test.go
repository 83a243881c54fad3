package rebuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/snapshot"
)

// These tests hold the snapshot path to the one file rule (package
// internal/fsafe) through the library's entry points: Open, Save,
// BuildSnapshot, Describe.

// tgtDB creates dir/app.db in WAL mode with records(id TEXT PRIMARY KEY)
// holding n ids, and returns it with a connection that stays open (so
// the -wal file lives) and never checkpoints (so the rows are in it).
func tgtDB(t *testing.T, dir string, n int) (string, *sql.DB) {
	t.Helper()
	path := filepath.Join(dir, "app.db")
	db, err := testdriver.Open(path, testdriver.App{JournalMode: "WAL", BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(1)
	for _, q := range []string{`PRAGMA wal_autocheckpoint = 0`, `CREATE TABLE records (id TEXT PRIMARY KEY)`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	tx, _ := db.Begin()
	for i := range n {
		if _, err := tx.Exec(`INSERT INTO records VALUES (?)`, fmt.Sprintf("id-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return path, db
}

func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	return sha256.Sum256(readFile(t, path))
}

// TestForceNeverReplacesTheWALThroughALink: the app names its database by
// a symbolic link; SQLite keeps the -wal beside the file the link names.
// Neither ReplaceForeignFile nor any spelling of that -wal gets it
// replaced, and every row written stays readable.
func TestForceNeverReplacesTheWALThroughALink(t *testing.T) {
	t.Parallel()
	realDir := t.TempDir()
	real, app := tgtDB(t, realDir, 2000)
	if _, err := app.Exec(`INSERT INTO records VALUES ('the-last-one')`); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(real, link); err != nil {
		t.Skip(err)
	}
	walBefore := sum(t, real+"-wal")
	walLink := filepath.Join(t.TempDir(), "records.sfb")
	if err := os.Symlink(real+"-wal", walLink); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{real + "-wal", walLink, filepath.Join(realDir, ".", "app.db-wal"), real + "-shm"} {
		cfg := config{DBConfig: DBConfig{Path: link, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: target, ReplaceForeignFile: true}}
		if _, err := BuildSnapshot(context.Background(), cfg.DBConfig, cfg.Source); !errors.Is(err, ErrUnsafeTarget) || !strings.Contains(err.Error(), "database's own file") {
			t.Fatalf("BuildSnapshot --out %s --force = %v, want ErrUnsafeTarget", target, err)
		}
		// The app's Open serves all the same, reports the refusal, and
		// saves nothing there (Close included).
		ix, err := Open(context.Background(), cfg.DBConfig, cfg.Source)
		if err != nil {
			t.Fatalf("Open with Snapshot %s = %v", target, err)
		}
		if err := ix.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st := stats(ix); !errors.Is(st.SnapshotError, ErrUnsafeTarget) || !st.Serving {
			t.Fatalf("Open with Snapshot %s: serving %v, SnapshotError %v, want ErrUnsafeTarget", target, st.Serving, st.SnapshotError)
		}
		if err := ix.Save(context.Background()); !errors.Is(err, ErrUnsafeTarget) {
			t.Fatalf("Save to %s = %v, want ErrUnsafeTarget", target, err)
		}
		if err := ix.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// The app's Open writes to the database (it attaches and records its
	// scan), so the -wal grows; it must still be SQLite's write-ahead log,
	// never a snapshot written over it.
	if wal, err := os.ReadFile(real + "-wal"); err == nil && len(wal) > 0 {
		if magic := string(wal[:4]); magic != "\x37\x7f\x06\x82" && magic != "\x37\x7f\x06\x83" {
			t.Fatalf("the -wal is no longer a write-ahead log (starts %q)", wal[:8])
		}
	}
	_ = walBefore
	var n int
	if err := app.QueryRow(`SELECT count(*) FROM records`).Scan(&n); err != nil || n != 2001 {
		t.Fatalf("rows after the refusals: %d, %v", n, err)
	}
}

// TestTempLikeAppFileSurvives: an app's file whose name starts like the
// library's temporary files, stale and even holding the snapshot magic,
// survives every save and sweep (Open, Save, Close, BuildSnapshot).
func TestTempLikeAppFileSurvives(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, _ := tgtDB(t, dir, 100)
	snap := filepath.Join(dir, "records.sfb")
	notes := map[string][]byte{
		snap + ".tmp-notes":            []byte("the app's notes\n"),
		snap + ".tmp-notes.bak":        append(snapshot.Magic[:], "a backup the app made"...),
		snap + ".tmp-0123456789abcdeX": append(snapshot.Magic[:], "not our name"...),
	}
	old := time.Now().Add(-2 * snapshot.StaleTemp)
	for name, b := range notes {
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(name, old, old); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: snap}}
	ctx := context.Background()
	ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := ix.Save(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := BuildSnapshot(ctx, cfg.DBConfig, cfg.Source); err != nil {
		t.Fatal(err)
	}
	for name, b := range notes {
		if got, err := os.ReadFile(name); err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%s removed or changed (%v)", filepath.Base(name), err)
		}
	}
}

// TestFIFOAtTheSnapshotPath: nothing blocks on a FIFO where the snapshot
// should be. A read-only Open answers from SQLite and says why
// (ErrNotRegular); a writable Open and the job refuse the path; Describe
// reports it; the FIFO stays.
func TestFIFOAtTheSnapshotPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, _ := tgtDB(t, dir, 100)
	if _, err := BuildSnapshot(context.Background(), DBConfig{Path: path, Driver: testdriver.Driver()}, Source{Table: "records", Column: "id", Snapshot: filepath.Join(dir, "first.sfb")}); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "records.sfb")
	if err := mkfifo(fifo); err != nil {
		t.Skip(err)
	}
	cfg := config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: fifo}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx := context.Background()
		ro := cfg
		ro.ReadOnly = true
		ix, err := Open(ctx, ro.DBConfig, ro.Source)
		if err != nil {
			t.Errorf("read-only Open = %v", err)
			return
		}
		_ = ix.Wait(ctx) // the load, in the background
		st := stats(ix)
		if !errors.Is(st.SnapshotError, snapshot.ErrNotRegular) || !strings.Contains(st.SnapshotError.Error(), "FIFO") {
			t.Errorf("read-only Open: snapshot error %v, want ErrNotRegular naming a FIFO", st.SnapshotError)
		}
		if m, err := missingList(ctx, ix, []string{"id-1", "nope"}); err != nil || len(m) != 1 || m[0] != "nope" {
			t.Errorf("read-only Missing = %v, %v", m, err)
		}
		_ = ix.Close(ctx)
		if ix, err := Open(ctx, cfg.DBConfig, cfg.Source); err != nil {
			t.Errorf("Open = %v", err)
		} else {
			if st := stats(ix); !errors.Is(st.SnapshotError, ErrUnsafeTarget) || !strings.Contains(st.SnapshotError.Error(), "FIFO") {
				t.Errorf("Open: SnapshotError %v, want ErrUnsafeTarget naming a FIFO", st.SnapshotError)
			}
			_ = ix.Close(ctx)
		}
		if _, err := BuildSnapshot(ctx, cfg.DBConfig, cfg.Source); !errors.Is(err, ErrUnsafeTarget) {
			t.Errorf("BuildSnapshot = %v, want ErrUnsafeTarget", err)
		}
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second): // a hang guard: the bug blocks forever
		t.Fatal("blocked on a FIFO at the snapshot path")
	}
	if info, err := os.Lstat(fifo); err != nil || info.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v", err)
	}
}

// TestSnapshotThroughALink: a snapshot path that is a symbolic link is
// followed: saves replace the file it names, in that file's directory,
// the link stays, and an Open through the link loads the file.
func TestSnapshotThroughALink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, app := tgtDB(t, dir, 500)
	data := t.TempDir()
	real := filepath.Join(data, "records.sfb")
	link := filepath.Join(dir, "records.sfb")
	if err := os.Symlink(real, link); err != nil {
		t.Skip(err)
	}
	cfg := config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: link, NoAutoRebuild: true}}
	ctx := context.Background()
	for round := range 2 {
		if _, err := BuildSnapshot(ctx, cfg.DBConfig, cfg.Source); err != nil {
			t.Fatal(err)
		}
		if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("round %d: the link was replaced", round)
		}
		if _, err := readSnap(t, path, real); err != nil {
			t.Fatalf("round %d: the file the link names: %v", round, err)
		}
		if _, err := app.Exec(`INSERT INTO records VALUES (?)`, fmt.Sprint("later-", round)); err != nil {
			t.Fatal(err)
		}
	}
	ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close(ctx)
	if err := ix.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if st := stats(ix); !st.Serving || st.SnapshotError != nil {
		t.Fatalf("Open through the link: serving %v, %v", st.Serving, st.SnapshotError)
	}
	if m, err := missingList(ctx, ix, []string{"later-1", "id-7", "nope"}); err != nil || len(m) != 1 || m[0] != "nope" {
		t.Fatalf("Missing = %v, %v", m, err)
	}
	for _, d := range []string{dir, data} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if strings.Contains(e.Name(), ".tmp-") {
				t.Fatalf("%s left in %s", e.Name(), d)
			}
		}
	}
}

// TestRecreatedDatabaseIsNamed: the database was deleted and created
// again; the cron job's refusal of the old snapshot says so, with the
// file's dataset and time, and what to do.
func TestRecreatedDatabaseIsNamed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, app := tgtDB(t, dir, 50)
	snap := filepath.Join(dir, "records.sfb")
	cfg := config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: snap}}
	if _, err := BuildSnapshot(context.Background(), cfg.DBConfig, cfg.Source); err != nil {
		t.Fatal(err)
	}
	h, err := snapshot.ReadHeader(snap)
	if err != nil {
		t.Fatal(err)
	}
	_ = app.Close()
	for _, s := range []string{"", "-wal", "-shm", "-journal"} {
		_ = os.Remove(path + s)
	}
	tgtDB(t, dir, 10)
	_, err = BuildSnapshot(context.Background(), cfg.DBConfig, cfg.Source)
	if !errors.Is(err, ErrUnsafeTarget) {
		t.Fatalf("BuildSnapshot after the database was recreated = %v", err)
	}
	for _, want := range []string{hex.EncodeToString(h.DatasetID[:]), h.Created.UTC().Format(time.RFC3339), "deleted and created again", "delete it", "ReplaceForeignFile"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("the refusal does not say %q: %v", want, err)
		}
	}
	// Once the new database is attached (here by another snapshot path),
	// the refusal names both datasets.
	if _, err := BuildSnapshot(context.Background(), DBConfig{Path: path, Driver: testdriver.Driver()}, Source{Table: "records", Column: "id", Snapshot: filepath.Join(dir, "new.sfb")}); err != nil {
		t.Fatal(err)
	}
	_, err = BuildSnapshot(context.Background(), cfg.DBConfig, cfg.Source)
	if !errors.Is(err, ErrUnsafeTarget) || !strings.Contains(err.Error(), hex.EncodeToString(h.DatasetID[:])) || !strings.Contains(err.Error(), "this database's source is dataset") {
		t.Fatalf("BuildSnapshot over another dataset's file = %v", err)
	}
}

// TestSnapshotTargetRefusals: no configuration can make the library
// replace the database (under any path), one of its files, a directory,
// a file that is not a snapshot or another dataset's snapshot (the last
// two unless forced); refusals come before any DDL or scan.
func TestSnapshotTargetRefusals(t *testing.T) {
	t.Parallel()
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
					if _, err := readSnap(t, path, tc.target); err != nil {
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
				if st := stats(ix); !errors.Is(st.SnapshotError, ErrUnsafeTarget) || !st.Serving {
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

// TestSaveRefusesAFileThatAppeared: the check runs at every save, not
// only at Open: a file put in the snapshot's place later is not replaced.
func TestSaveRefusesAFileThatAppeared(t *testing.T) {
	t.Parallel()
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
