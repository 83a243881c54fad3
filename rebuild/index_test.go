package rebuild

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/snapshot"
)

func TestUnusableSnapshotsServeFromSQLiteAndRebuild(t *testing.T) {
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
			if err := ix.Stats().SnapshotError; !errors.Is(err, tc.want) {
				t.Fatalf("SnapshotError = %v, want %v", err, tc.want)
			}
			probe := append(slices.Clone(seed[:300]), ids("never", 300)...)
			expect(t, ix, set(seed), probe) // in bypass or already rebuilt: correct either way
			waitServing(t, ix)
			expect(t, ix, set(seed), probe)
			if _, err := snapshot.ReadFile(cfg.Snapshot); err != nil {
				t.Fatalf("rebuild did not replace the unusable snapshot: %v", err)
			}
		})
	}
}

func TestBadConfigAndSources(t *testing.T) {
	ctx := context.Background()
	path := appDB(t, "a")
	db := rawDB(t, path)
	mustExec(t, db, `CREATE TABLE loose (id TEXT, body TEXT)`)
	for _, tc := range []struct {
		name string
		cfg  config
		want error
	}{
		{"no path", config{DBConfig: DBConfig{Driver: testdriver.Driver()}, Source: Source{}}, ErrBadConfig},
		{"table without column", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records"}}, ErrBadConfig},
		{"injection", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: `records"; DROP TABLE records; --`, Column: "id"}}, ErrBadName},
		{"reserved", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "sqlite_master", Column: "name"}}, ErrBadName},
		{"digit first", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "1records", Column: "id"}}, ErrBadName},
		{"space", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "my id"}}, ErrBadName},
		{"too long", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: string(make([]byte, 200)), Column: "id"}}, ErrBadName},
		{"invalid utf-8", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "rec\xffords", Column: "id"}}, ErrBadName},
		{"fpr", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{FPR: 1.5}}, ErrBadConfig},
		{"headroom", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Headroom: 0.5}}, ErrBadConfig},
		{"no such table", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "nope", Column: "id"}}, ErrNoSource},
		{"no such column", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "nope"}}, ErrNoSource},
		{"unindexed", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "loose", Column: "id"}}, ErrNotIndexed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix, err := Open(ctx, tc.cfg.DBConfig, tc.cfg.Source)
			if !errors.Is(err, tc.want) {
				if ix != nil {
					_ = ix.Close(ctx)
				}
				t.Fatalf("Open = %v, want %v", err, tc.want)
			}
		})
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM records`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("records after bad configs: %d rows, %v", n, err)
	}
	ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "loose", Column: "id", AllowUnindexed: true}})
	if ok, err := ix.Fetched(ctx, "a"); err != nil || ok {
		t.Fatalf("Fetched on an empty unindexed table: %v, %v", ok, err)
	}
}

func TestStatsRebuildDue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "own.db")
	ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Capacity: 1024, FPR: 0.01, AutoRebuild: AutoRebuild{NotWhenDue: true}}}) // the app watches RebuildDue
	ctx := context.Background()
	if st := ix.Stats(); st.RebuildDue || st.Capacity != 2048 && st.Capacity != 1024 {
		t.Fatalf("fresh index: %+v", st)
	}
	if err := ix.MarkFetched(ctx, ids("k", 20000)...); err != nil {
		t.Fatal(err)
	}
	if err := ix.Wait(ctx); err != nil { // the filter takes the log in
		t.Fatal(err)
	}
	st := ix.Stats()
	if !st.RebuildDue || st.EstimatedFPR < 0.02 {
		t.Fatalf("overfilled index: RebuildDue %v, estimated rate %v", st.RebuildDue, st.EstimatedFPR)
	}
	if err := ix.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.RebuildDue || st.Capacity < 40000 || st.Rebuilds < 2 {
		t.Fatalf("after rebuild: %+v", st)
	}
}

// TestMissingDatabaseIsNotCreated: a mistyped path for an app's table is
// an error, and leaves no empty database behind.
func TestMissingDatabaseIsNotCreated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "typo.db")
	_, err := Open(context.Background(), DBConfig{Path: path, Driver: testdriver.Driver()}, Source{Table: "records", Column: "id"})
	if !errors.Is(err, ErrNoSource) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open = %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("Open created %s", path)
	}
}
