package rebuild

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// TestPathsSQLiteAccepts: database and snapshot paths holding bytes that
// URI syntax gives a meaning ('?', '#', '%' followed by hex digits,
// spaces, '&', '=', ';'), and a path spelled with a leading "//", work
// through Open, Rebuild, Close's save, a reopen from the snapshot,
// BuildSnapshot, a read-only open and Detach, with exact answers; no file
// appears anywhere but beside the database (nor in the working
// directory).
func TestPathsSQLiteAccepts(t *testing.T) {
	t.Parallel()
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cwdBefore := dirEntries(t, cwd)
	t.Run("paths", func(t *testing.T) { pathsSQLiteAccepts(t) }) // returns once its parallel subtests have ended
	if got := dirEntries(t, cwd); !slices.Equal(got, cwdBefore) {
		t.Fatalf("files in the working directory: %v, were %v", got, cwdBefore)
	}
}

func pathsSQLiteAccepts(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"q?mode=memory#h%41 z&x=1;y", "pct%2f%00%"} {
		for _, slashes := range []bool{false, true} {
			t.Run(name+map[bool]string{true: "/leading-slashes"}[slashes], func(t *testing.T) {
				t.Parallel()
				root, err := filepath.EvalSymlinks(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				dir := filepath.Join(root, name)
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				real := filepath.Join(dir, "app "+name+".db")
				app := plainDB(t, real)
				mustExec(t, app, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`)
				seed := ids("seed", 200)
				insertIDs(t, app, seed...)
				path := real
				if slashes {
					path = "/" + real // "//tmp/...": the same file to the system
				}
				snap := filepath.Join(dir, "snap "+name+".sfb")
				cfg := config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: snap}}
				probe := slices.Concat(seed, ids("later", 50), ids("never", 100))

				ix := open(t, cfg)
				exact(t, ix, tableIDs(t, real, "records"), probe)
				insertIDs(t, app, ids("later", 50)...)
				exact(t, ix, tableIDs(t, real, "records"), probe)
				if err := ix.Rebuild(ctx); err != nil {
					t.Fatal(err)
				}
				insertIDs(t, app, "after-rebuild")
				probe = append(probe, "after-rebuild")
				exact(t, ix, tableIDs(t, real, "records"), probe)
				if err := ix.Close(ctx); err != nil {
					t.Fatal(err)
				}
				again := open(t, cfg)
				if st := stats(again); !st.Serving || st.SnapshotError != nil {
					t.Fatalf("reopen: serving %v, snapshot error %v", st.Serving, st.SnapshotError)
				}
				exact(t, again, tableIDs(t, real, "records"), probe)
				if err := again.Close(ctx); err != nil {
					t.Fatal(err)
				}
				cron := cfg
				cron.Snapshot = filepath.Join(dir, "cron "+name+".sfb")
				if slashes {
					cron.Snapshot = "/" + cron.Snapshot
				}
				rep, err := BuildSnapshot(ctx, cron.DBConfig, cron.Source)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Rows != int64(len(tableIDs(t, real, "records"))) {
					t.Fatalf("BuildSnapshot read %d rows", rep.Rows)
				}
				ro := cron
				ro.ReadOnly = true
				roIx := open(t, ro)
				if st := stats(roIx); !st.Serving || st.SnapshotError != nil {
					t.Fatalf("read-only open of the cron job's snapshot: serving %v, snapshot error %v", st.Serving, st.SnapshotError)
				}
				exact(t, roIx, tableIDs(t, real, "records"), probe)
				if err := roIx.Close(ctx); err != nil {
					t.Fatal(err)
				}
				_ = app.Close()
				if err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "id"); err != nil {
					t.Fatal(err)
				}
				if objs := libraryObjects(t, real); len(objs) != 0 {
					t.Fatalf("after Detach: %q", objs)
				}
				integrity(t, real)
				// Every file is beside the database, and is one of its files
				// or a snapshot.
				want := map[string]bool{real: true, real + "-wal": true, real + "-shm": true, real + "-journal": true,
					snap: true, filepath.Clean(cron.Snapshot): true}
				err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
					if err != nil || p == root || p == dir {
						return err
					}
					if !want[p] {
						t.Errorf("stray file %s", p)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
