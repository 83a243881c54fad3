package rebuild

import (
	"bytes"
	"context"
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
	"github.com/syncfilter/syncfilter/snapshot"
	"golang.org/x/text/unicode/norm"
)

// TestForeignSnapshotAtOpen: the app cleared its data (deleted the
// database and created it again) and the snapshot of the old dataset
// survived at the snapshot path. Open and Close succeed, every answer is
// exact, Stats.SnapshotError says why the file is neither used nor
// replaced, and the file is left as it was; with ReplaceForeignFile the
// index replaces it and the next open loads it. The same holds for a
// read-only open and for the snapshot of another database.
func TestForeignSnapshotAtOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := driftDB(t, "WAL", ids("old", 300))
	cfg := appConfig(path)
	first := open(t, cfg)
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Clear data: the database goes, the snapshot stays.
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	app := modeConn(t, path, "WAL")
	mustExec(t, app, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`)
	insertIDs(t, app, ids("new", 200)...)
	foreign := fileSum(t, cfg.Snapshot)
	probe := slices.Concat(ids("old", 300), ids("new", 200), ids("later", 20), ids("never", 100))

	for round := range 2 { // the second open finds the same file again
		ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
		if err != nil {
			t.Fatalf("round %d: Open with a foreign snapshot: %v", round, err)
		}
		exact(t, ix, tableIDs(t, path, "records"), probe) // SQLite answers until the filter is ready
		if err := ix.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if st := stats(ix); st.SnapshotError == nil {
			t.Fatalf("round %d: no SnapshotError for another dataset's snapshot", round)
		}
		exact(t, ix, tableIDs(t, path, "records"), probe)
		waitServing(t, ix)
		insertIDs(t, app, fmt.Sprintf("later-%07d", round))
		exact(t, ix, tableIDs(t, path, "records"), probe)
		if err := ix.Save(ctx); !errors.Is(err, ErrUnsafeTarget) {
			t.Fatalf("round %d: Save over another dataset's snapshot = %v, want ErrUnsafeTarget", round, err)
		}
		if err := ix.Close(ctx); err != nil {
			t.Fatalf("round %d: Close with a foreign snapshot: %v", round, err)
		}
		if fileSum(t, cfg.Snapshot) != foreign {
			t.Fatalf("round %d: the other dataset's snapshot was replaced", round)
		}
	}
	ro := cfg
	ro.ReadOnly = true
	roIx := open(t, ro)
	if stats(roIx).SnapshotError == nil {
		t.Fatal("read-only: no SnapshotError")
	}
	exact(t, roIx, tableIDs(t, path, "records"), probe)
	if _, err := BuildSnapshot(ctx, cfg.DBConfig, cfg.Source); !errors.Is(err, ErrUnsafeTarget) {
		t.Fatalf("BuildSnapshot over another dataset's snapshot = %v, want ErrUnsafeTarget", err)
	}

	// The app says the file may go.
	force := cfg
	force.ReplaceForeignFile = true
	ix := open(t, force)
	waitServing(t, ix)
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if fileSum(t, cfg.Snapshot) == foreign {
		t.Fatal("ReplaceForeignFile: the file was not replaced")
	}
	again := open(t, cfg)
	if st := stats(again); !st.Serving || st.SnapshotError != nil {
		t.Fatalf("after the replacement: serving %v, snapshot error %v", st.Serving, st.SnapshotError)
	}
	exact(t, again, tableIDs(t, path, "records"), probe)

	// Another database's snapshot at the path, and damaged files.
	other := driftDB(t, "DELETE", ids("other", 50))
	otherCfg := appConfig(other)
	oix := open(t, otherCfg)
	if err := oix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	otherSnap, _ := os.ReadFile(otherCfg.Snapshot)
	for name, content := range map[string][]byte{
		"another database's": otherSnap,
		"truncated":          otherSnap[:len(otherSnap)/2],
		"magic only":         snapshot.Magic[:],
		"not a snapshot":     []byte("notes\n"),
		"empty":              nil,
	} {
		t.Run(name, func(t *testing.T) {
			c := cfg
			c.Snapshot = filepath.Join(t.TempDir(), "s.sfb")
			if err := os.WriteFile(c.Snapshot, content, 0o600); err != nil {
				t.Fatal(err)
			}
			ix, err := Open(ctx, c.DBConfig, c.Source)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			exact(t, ix, tableIDs(t, path, "records"), probe)
			if err := ix.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if stats(ix).SnapshotError == nil {
				t.Fatal("no SnapshotError")
			}
			if err := ix.Close(ctx); err != nil {
				t.Fatalf("Close: %v", err)
			}
		})
	}
}

func TestUnusableSnapshotsServeFromSQLiteAndRebuild(t *testing.T) {
	t.Parallel()
	seed := ids("seed", 2000)
	for _, tc := range []struct {
		name  string
		harm  func(t *testing.T, cfg config)
		want  error
		force bool // the file is not one the library may replace unasked
	}{
		{"corrupt", func(t *testing.T, cfg config) {
			raw, _ := os.ReadFile(cfg.Snapshot)
			raw[len(raw)/2] ^= 0x40
			_ = os.WriteFile(cfg.Snapshot, raw, 0o600)
		}, snapshot.ErrChecksum, false},
		{"truncated", func(t *testing.T, cfg config) {
			raw, _ := os.ReadFile(cfg.Snapshot)
			_ = os.WriteFile(cfg.Snapshot, raw[:len(raw)-10], 0o600)
		}, snapshot.ErrTruncated, false},
		{"not a snapshot", func(t *testing.T, cfg config) {
			_ = os.WriteFile(cfg.Snapshot, []byte("hello"), 0o600)
		}, snapshot.ErrNotSnapshot, true},
		{"missing", func(t *testing.T, cfg config) { _ = os.Remove(cfg.Snapshot) }, os.ErrNotExist, false},
		{"foreign", func(t *testing.T, cfg config) {
			other := appConfig(appDB(t, ids("foreign", 10)...))
			ix := open(t, other)
			if err := ix.Save(context.Background()); err != nil {
				t.Fatal(err)
			}
			raw, _ := os.ReadFile(other.Snapshot)
			_ = os.WriteFile(cfg.Snapshot, raw, 0o600)
		}, snapshot.ErrIncompatible, true},
		{"database older than snapshot", func(t *testing.T, cfg config) {
			// Restore the database from a backup taken before the last
			// write: the snapshot claims a generation the log lost.
			backup, _ := os.ReadFile(cfg.Path)
			ix := open(t, cfg)
			db := rawDB(t, cfg.Path)
			insertIDs(t, db, "after-backup")
			_ = db.Close()
			if ok, err := ix.Fetched(context.Background(), "after-backup"); !ok || err != nil {
				t.Fatalf("Fetched = %v, %v", ok, err)
			}
			if err := ix.Wait(context.Background()); err != nil { // caught up: the next save covers it
				t.Fatal(err)
			}
			if err := ix.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			_ = os.Remove(cfg.Path + "-wal")
			_ = os.Remove(cfg.Path + "-shm")
			_ = os.WriteFile(cfg.Path, backup, 0o600)
		}, ErrNotVouched, false}, // the backup has no record of the later save
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := appConfig(appDB(t, seed...))
			first := open(t, cfg)
			if err := first.Close(context.Background()); err != nil { // saves
				t.Fatal(err)
			}
			if err := checkpoint(cfg.Path); err != nil {
				t.Fatal(err)
			}
			tc.harm(t, cfg)
			cfg.ReplaceForeignFile = tc.force
			ix := open(t, cfg)
			if err := stats(ix).SnapshotError; !errors.Is(err, tc.want) {
				t.Fatalf("SnapshotError = %v, want %v", err, tc.want)
			}
			probe := append(slices.Clone(seed[:300]), ids("never", 300)...)
			expect(t, ix, set(seed), probe) // in bypass or already rebuilt: correct either way
			waitServing(t, ix)
			expect(t, ix, set(seed), probe)
			if _, err := readSnap(t, cfg.Path, cfg.Snapshot); err != nil {
				t.Fatalf("rebuild did not replace the unusable snapshot: %v", err)
			}
		})
	}
}

// TestReloadPicksUpAnotherWritersSnapshot: a cron-like second index writes
// the snapshot file; the running one reloads it and catches up.
func TestReloadPicksUpAnotherWritersSnapshot(t *testing.T) {
	t.Parallel()
	path := appDB(t, ids("seed", 1000)...)
	cfg := appConfig(path)
	app := open(t, cfg)
	db := rawDB(t, path)
	insertIDs(t, db, ids("cron", 500)...)
	cron := open(t, cfg)
	if err := cron.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	insertIDs(t, db, ids("after", 200)...)
	if err := app.k.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := stats(app)
	if !st.Serving || st.Capacity < 3000 {
		t.Fatalf("after reload: %+v", st)
	}
	probe := append(append(ids("seed", 1000), ids("cron", 500)...), append(ids("after", 200), ids("never", 300)...)...)
	expect(t, app, set(ids("seed", 1000), ids("cron", 500), ids("after", 200)), probe)
	// A damaged file is refused and the running filter stays.
	raw, _ := os.ReadFile(cfg.Snapshot)
	raw[300] ^= 1
	_ = os.WriteFile(cfg.Snapshot, raw, 0o600)
	if err := app.k.Reload(context.Background()); !errors.Is(err, snapshot.ErrChecksum) {
		t.Fatalf("Reload of a damaged file: %v", err)
	}
	if !stats(app).Serving {
		t.Fatal("refused reload left no filter serving")
	}
	expect(t, app, set(ids("seed", 1000), ids("cron", 500), ids("after", 200)), probe)
}

// TestSaveFailureKeepsServing: the disk refuses the snapshot. The rebuilt
// filter is complete, so it serves; the error is reported; the old file
// is untouched.
func TestSaveFailureKeepsServing(t *testing.T) {
	t.Parallel()
	seed := ids("seed", 1000)
	path := appDB(t, seed...)
	cfg := appConfig(path)
	dir := filepath.Join(t.TempDir(), "snap")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg.Snapshot = filepath.Join(dir, "f.sfb")
	ix := open(t, cfg)
	before, err := os.ReadFile(cfg.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	// Replace the directory by a file: creating the temp file fails (as a
	// full disk would), even for root.
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	insertIDs(t, rawDB(t, path), "new-1")
	err = ix.Rebuild(context.Background())
	if err == nil {
		t.Fatal("Rebuild succeeded without a snapshot directory")
	}
	if st := stats(ix); !st.Serving || st.LastError == nil {
		t.Fatalf("after failed save: %+v", st)
	}
	expect(t, ix, set(seed, []string{"new-1"}), append(slices.Clone(seed[:100]), "new-1", "never"))
	_ = os.Remove(dir)
	if err := os.Rename(dir+".away", dir); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(cfg.Snapshot)
	if !slices.Equal(before, after) {
		t.Fatal("snapshot changed by a failed save")
	}
}

// TestFirstOpenWithUnwritableSnapshot: the first scan succeeds but the
// snapshot cannot be written. The index serves; the error is reported.
func TestFirstOpenWithUnwritableSnapshot(t *testing.T) {
	t.Parallel()
	path := appDB(t, ids("seed", 200)...)
	cfg := appConfig(path)
	cfg.Snapshot = filepath.Join(t.TempDir(), "no-such-dir", "f.sfb")
	ix := open(t, cfg)
	st := stats(ix)
	if !st.Serving || st.LastError == nil || !errors.Is(st.LastError, os.ErrNotExist) {
		t.Fatalf("serving %v, last error %v", st.Serving, st.LastError)
	}
	expect(t, ix, set(ids("seed", 200)), append(ids("seed", 200)[:50], "never"))
}

// TestReadOnlyUsesAnAttachedSnapshot: on an attached source, a read-only
// index serves from the snapshot and catches up in memory on rows other
// connections committed after it, writing nothing.
func TestReadOnlyUsesAnAttachedSnapshot(t *testing.T) {
	t.Parallel()
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
	if st := stats(ix); !st.Serving || !st.Attached || st.SnapshotError != nil {
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

// TestOpenSweepsStaleTemporaryFiles: the temporary files of saves killed
// outright, beside the snapshot, are removed by the next open once stale
// (the opening load sweeps them, as a save would); a young one (a save in
// progress elsewhere) and a file that only looks like one stay.
func TestOpenSweepsStaleTemporaryFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 100)...)
	cfg := appConfig(path)
	ix := open(t, cfg)
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	write := func(name string, content []byte, age time.Duration) string {
		full := cfg.Snapshot + name
		if err := os.WriteFile(full, content, 0o600); err != nil {
			t.Fatal(err)
		}
		when := time.Now().Add(-age)
		if err := os.Chtimes(full, when, when); err != nil {
			t.Fatal(err)
		}
		return full
	}
	stale := write(".tmp-0123456789abcdef", snapshot.Magic[:], 2*snapshot.StaleTemp)
	young := write(".tmp-fedcba9876543210", snapshot.Magic[:], 0)
	other := write(".tmp-00112233445566aa", []byte("the app's own file"), 2*snapshot.StaleTemp)
	again := open(t, cfg)
	if err := again.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("a stale temporary file of a killed save is still there after an open: %v", err)
	}
	for _, kept := range []string{young, other} {
		if _, err := os.Stat(kept); err != nil {
			t.Fatalf("%s was removed: %v", kept, err)
		}
	}
}

// TestSaveSaysWhatIsUnderWay: Save before any filter serves refuses with
// ErrNotServing, and says which background work is asked for and not
// done (the first scan here) and that Wait waits for it; once it is done
// Save saves.
func TestSaveSaysWhatIsUnderWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 1000)...)
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	cfg := config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver(), knobs: knobs{
		scanRow: func(n int64) error {
			if n == 0 {
				once.Do(func() { close(started); <-release })
			}
			return nil
		},
	}}, Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb"}}
	ix, err := Open(ctx, cfg.DBConfig, cfg.Source) // returns before its first scan is done
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close(ctx) })
	firstCall(t, ix)
	select {
	case <-started:
	case <-time.After(callBound):
		close(release)
		t.Fatal("the first scan never started")
	}
	err = ix.Save(ctx)
	close(release)
	if !errors.Is(err, ErrNotServing) || !strings.Contains(err.Error(), "rebuild asked for") {
		t.Fatalf("Save during the first scan = %v, want ErrNotServing naming the rebuild under way", err)
	}
	if err := ix.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ix.Save(ctx); err != nil {
		t.Fatalf("Save once the filter serves = %v", err)
	}
}
