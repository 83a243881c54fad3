package rebuild

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// TestBuildSnapshotForCron: the cron entry point writes a snapshot an app
// then opens and trusts, including rows written after the job.
func TestBuildSnapshotForCron(t *testing.T) {
	t.Parallel()
	seed := ids("seed", 20000)
	path := appDB(t, seed...)
	cfg := appConfig(path)
	var calls atomic.Int64
	var last atomic.Pointer[[2]int64]
	cfg.Progress = func(done, total int64) { calls.Add(1); last.Store(&[2]int64{done, total}) }
	cfg.ProgressEvery = 1000 // keys are read in chunks of thousands: a call per chunk
	rep, err := BuildSnapshot(context.Background(), cfg.DBConfig, cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	// Progress runs beside the scan and may skip values, never the last.
	if l := last.Load(); rep.Rows != 20000 || rep.Bytes <= 0 || rep.M == 0 || rep.Capacity < 40000 || calls.Load() < 1 || l == nil || *l != [2]int64{20000, 20000} {
		t.Fatalf("report %+v, %d progress calls, the last %v", rep, calls.Load(), l)
	}
	insertIDs(t, rawDB(t, path), "after-job")
	ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: cfg.Snapshot, NoAutoRebuild: true}})
	if st := stats(ix); !st.Serving || st.SnapshotError != nil {
		t.Fatalf("app did not use the job's snapshot: %+v", st)
	}
	expect(t, ix, set(seed, []string{"after-job"}), append(slices.Clone(seed[:100]), "after-job", "never"))
	if _, err := BuildSnapshot(context.Background(), DBConfig{Path: path, Driver: testdriver.Driver()}, Source{Table: "records", Column: "id"}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("no snapshot path: %v", err)
	}
}

// TestCronCancelledAfterItsScan: the cron job's context ends just after
// the scan of a first attach (in the last Progress call): the job fails
// and leaves the database and the directory as they were.
func TestCronCancelledAfterItsScan(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"DELETE", "WAL"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			path := driftDB(t, mode, ids("seed", 3000))
			dir := filepath.Dir(path)
			pristine, files := schema(t, path), dirEntries(t, dir)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg := appConfig(path)
			cfg.Progress = func(done, total int64) {
				if done >= total {
					cancel()
				}
			}
			if _, err := BuildSnapshot(ctx, cfg.DBConfig, cfg.Source); !errors.Is(err, context.Canceled) && !isInterrupted(err) {
				t.Fatalf("BuildSnapshot cancelled after its scan = %v, want context.Canceled", err)
			}
			if got := schema(t, path); !bytes.Equal(got, pristine) {
				t.Fatalf("sqlite_master after the cancelled cron job:\n%s", got)
			}
			if got := dirEntries(t, dir); !slices.Equal(got, files) {
				t.Fatalf("files after the cancelled cron job: %v, were %v", got, files)
			}
		})
	}
}
