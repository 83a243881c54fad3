package rebuild

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"slices"
	"testing"

	"github.com/syncfilter/syncfilter/snapshot"
	"github.com/syncfilter/syncfilter/syncfilter"
	"github.com/zeebo/blake3"
)

// copyDB takes a backup of the database file (after a checkpoint).
func copyDB(t *testing.T, path string) []byte {
	t.Helper()
	if err := checkpoint(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// restoreDB puts a backup back, as an OS restore would: the file only.
func restoreDB(t *testing.T, path string, backup []byte) {
	t.Helper()
	_ = os.Remove(path + "-wal")
	_ = os.Remove(path + "-shm")
	if err := os.WriteFile(path, backup, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRestoredDatabaseRefusesTheNewerSnapshot is the scenario of a phone
// restored from a backup: the snapshot on disk is newer than the database,
// and after the restore another program writes more rows than the
// snapshot's generation. The snapshot must be refused, every row found.
func TestRestoredDatabaseRefusesTheNewerSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 300)
	path := appDB(t, seed...)
	cfg := appConfig(path)
	if _, err := BuildSnapshot(ctx, cfg.DBConfig, cfg.Source); err != nil { // generation 0
		t.Fatal(err)
	}
	backup := copyDB(t, path)
	insertClosing(t, path, ids("lost", 100)...)
	rep, err := BuildSnapshot(ctx, cfg.DBConfig, cfg.Source) // generation 100
	if err != nil || rep.Generation != 100 {
		t.Fatalf("second build: %+v, %v", rep, err)
	}
	restoreDB(t, path, backup)
	later := ids("later", 150) // another program: generations 1..150 again
	insertClosing(t, path, later...)

	fetched := set(seed, later)
	probe := append(append(slices.Clone(seed), later...), ids("lost", 100)...)
	for _, readOnly := range []bool{true, false} {
		c := cfg
		c.ReadOnly = readOnly
		c.NoAutoRebuild = true
		ix := open(t, c)
		if err := stats(ix).SnapshotError; !errors.Is(err, ErrNotVouched) {
			t.Fatalf("read-only %v: SnapshotError = %v, want ErrNotVouched", readOnly, err)
		}
		expect(t, ix, fetched, probe)
		if err := ix.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ix := open(t, cfg) // rebuilds in the background, then serves
	waitServing(t, ix)
	expect(t, ix, fetched, probe)
}

// insertClosing inserts ids on a connection it closes again, so that no
// handle outlives a restore of the file.
func insertClosing(t *testing.T, path string, keys ...string) {
	t.Helper()
	db := rawDB(t, path)
	insertIDs(t, db, keys...)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// forge rewrites the snapshot at path with other bits or parameters and
// recomputes both checksums, as anyone holding the database's key can:
// BLAKE3 is public. The dataset id and generation are kept, so only the
// database's record can tell (or the key id, for another key).
func forge(t *testing.T, db, path string, how string) {
	t.Helper()
	s, err := readSnap(t, db, path)
	if err != nil {
		t.Fatal(err)
	}
	p := s.Params
	words := slices.Clone(s.Image.Words())
	switch how {
	case "zeroed payload":
		clear(words)
	case "another hash key":
		p.Key[0] ^= 1
	case "k = 21":
		p.K = 21
	case "all ones":
		for i := range words {
			words[i] = ^uint64(0)
		}
	default:
		t.Fatal(how)
	}
	img, err := syncfilter.NewImage(p, s.Items, words)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := snapshot.Encode(f, s.Header, img, snapshot.WithKey(p.Key)); err != nil {
		t.Fatal(err)
	}
}

func TestForgedSnapshotsAreRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 2000)
	for _, how := range []string{"zeroed payload", "another hash key", "k = 21", "all ones"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			path := appDB(t, seed...)
			cfg := appConfig(path)
			first := open(t, cfg)
			if err := first.Close(ctx); err != nil {
				t.Fatal(err)
			}
			forge(t, cfg.Path, cfg.Snapshot, how)
			if _, _, _, err := snapshot.VerifyFile(cfg.Snapshot); err != nil {
				t.Fatalf("the forgery does not even verify: %v", err)
			}
			want := ErrNotVouched
			if how == "another hash key" { // refused from its header
				want = snapshot.ErrWrongKey
			}
			c := cfg
			c.NoAutoRebuild = true
			ix := open(t, c)
			if err := stats(ix).SnapshotError; !errors.Is(err, want) {
				t.Fatalf("SnapshotError = %v, want %v", err, want)
			}
			expect(t, ix, set(seed), append(slices.Clone(seed[:500]), ids("never", 500)...))
			if err := ix.k.Reload(ctx); !errors.Is(err, want) {
				t.Fatalf("Reload = %v, want %v", err, want)
			}
		})
	}
}

// sparseClaim replaces the snapshot at path by a sparse file with the
// same header fields but m = bits, both header checksums recomputed and
// the length the header announces: nothing but the database can refuse
// it before reading gigabytes.
func sparseClaim(t *testing.T, path string, bits uint64) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head := slices.Clone(raw[:192])
	binary.LittleEndian.PutUint64(head[16:], bits)    // m
	binary.LittleEndian.PutUint64(head[112:], bits/8) // payload length
	sum := blake3.Sum256(head[:184])
	copy(head[184:], sum[:8])
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(head); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(192 + bits/8 + 32)); err != nil {
		t.Fatal(err)
	}
}

// allocDuring returns the bytes allocated while fn ran.
func allocDuring(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestSparseSnapshotIsRefusedBeforeAllocation: a file claiming 2^34 bits
// (2 GiB) for a source that needs a few KiB is refused by Open, Reload
// and a read-only check without allocating for the claim.
func TestSparseSnapshotIsRefusedBeforeAllocation(t *testing.T) {
	// Not parallel: measures the process's allocations (runtime.MemStats).
	ctx := context.Background()
	seed := ids("seed", 200)
	path := appDB(t, seed...)
	cfg := appConfig(path)
	first := open(t, cfg)
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	sparseClaim(t, cfg.Snapshot, 1<<34)
	if c, err := snapshot.ReadClaim(cfg.Snapshot); err != nil || c.Params.M != 1<<34 {
		t.Fatalf("the sparse file's claim does not read: %v", err)
	}
	for _, mode := range []string{"Open", "read-only Open", "Reload"} {
		var err error
		var ix *Index
		grew := allocDuring(func() {
			c := cfg
			c.NoAutoRebuild = true
			c.ReadOnly = mode == "read-only Open"
			ix, err = Open(ctx, c.DBConfig, c.Source)
			if err == nil && mode == "Reload" {
				err = ix.k.Reload(ctx)
			} else if err == nil {
				_ = ix.Wait(ctx) // the load, in the background
				err = stats(ix).SnapshotError
			}
		})
		if ix != nil {
			_ = ix.Close(ctx)
		}
		if !errors.Is(err, ErrNotVouched) {
			t.Fatalf("%s: %v, want ErrNotVouched", mode, err)
		}
		if grew > 64<<20 {
			t.Fatalf("%s allocated %d MiB for a refused claim", mode, grew>>20)
		}
	}
}

// TestOversizedRecordedSnapshotIsImplausible: even a snapshot the
// database recorded is refused before its payload is read when it is far
// larger than the source now needs.
func TestOversizedRecordedSnapshotIsImplausible(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 100)...)
	cfg := appConfig(path)
	big := cfg
	big.Capacity = 2_000_000 // ~2.4 MB of filter for 100 rows
	first := open(t, big)
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	cfg.NoAutoRebuild = true
	ix := open(t, cfg)
	if err := stats(ix).SnapshotError; !errors.Is(err, ErrImplausible) {
		t.Fatalf("SnapshotError = %v, want ErrImplausible", err)
	}
	expect(t, ix, set(ids("seed", 100)), append(ids("seed", 100), "never"))
}

// TestSnapshotsOfOtherProcessesAreVouched: the cron job's file is
// accepted by a running app's Reload, and two app processes sharing the
// database accept each other's saves.
func TestSnapshotsOfOtherProcessesAreVouched(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 1000)
	path := appDB(t, seed...)
	cfg := appConfig(path)
	a := open(t, cfg)
	insertIDs(t, rawDB(t, path), ids("cron", 100)...)
	if _, err := BuildSnapshot(ctx, cfg.DBConfig, cfg.Source); err != nil {
		t.Fatal(err)
	}
	if err := a.k.Reload(ctx); err != nil {
		t.Fatalf("Reload of the cron job's snapshot: %v", err)
	}
	b := open(t, cfg) // a second app process on the same files
	if err := stats(b).SnapshotError; err != nil {
		t.Fatalf("second process refused the cron snapshot: %v", err)
	}
	insertIDs(t, rawDB(t, path), ids("b", 50)...)
	if _, err := b.Fetched(ctx, "b-0000000"); err != nil {
		t.Fatal(err)
	}
	if err := b.Save(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.k.Reload(ctx); err != nil {
		t.Fatalf("Reload of the other process's save: %v", err)
	}
	expect(t, a, set(seed, ids("cron", 100), ids("b", 50)), append(ids("b", 50), ids("never", 100)...))
}
