package rebuild

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/syncfilter/syncfilter/snapshot"
)

// besideDB returns the files in the database's folder that are not the
// database or its -wal, -shm or -journal file, with their bytes.
func besideDB(t *testing.T, path string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		name := filepath.Join(filepath.Dir(path), e.Name())
		if slices.Contains([]string{path, path + "-wal", path + "-shm", path + "-journal"}, name) || e.IsDir() {
			continue
		}
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = raw
	}
	return out
}

// TestNoFileBesideTheDatabaseTellsWhatItHolds: after an app's open, its
// writes, saves and close, and a cron job's rebuild, no file the library
// left beside the database holds a stored id (in any spelling) or the
// key of the positions, raw or in hex (invariant 16).
func TestNoFileBesideTheDatabaseTellsWhatItHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stored := append(ids("secret-member", 300), "cafe\u0301-secret", "caf\u00e9-secret")
	path := appDB(t, stored[:200]...)
	cfg := appConfig(path)
	ix := open(t, cfg)
	insertIDs(t, rawDB(t, path), stored[200:]...)
	expect(t, ix, set(stored), append(slices.Clone(stored), ids("never", 50)...))
	if err := ix.Save(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	cron := cfg
	cron.Snapshot = path + ".cron.sfb"
	if _, err := BuildSnapshot(ctx, cron.DBConfig, cron.Source); err != nil {
		t.Fatal(err)
	}
	key := dbKey(t, path, cfg.Snapshot)
	if key == ([32]byte{}) {
		t.Fatal("the database holds no key")
	}
	files := besideDB(t, path)
	if len(files) < 2 {
		t.Fatalf("files beside the database: %d, want both snapshots", len(files))
	}
	secrets := [][]byte{key[:], []byte(hex.EncodeToString(key[:])), []byte(strings.ToUpper(hex.EncodeToString(key[:])))}
	for _, id := range stored {
		secrets = append(secrets, []byte(id))
	}
	for name, raw := range files {
		if h, err := snapshot.ReadHeader(filepath.Join(filepath.Dir(path), name)); err != nil || h.Version != snapshot.Version2 {
			t.Errorf("%s: version %d, %v; want a version 2 snapshot", name, h.Version, err)
		}
		for _, s := range secrets {
			if bytes.Contains(raw, s) {
				t.Errorf("%s holds %q", name, s)
			}
		}
	}
}

// TestCopiedSnapshotTestsNoGuess: a version 2 snapshot copied without its
// database cannot be read into a filter: without a key, or with a
// guessed one, the read fails with ErrWrongKey before the payload; its
// header holds the key's id, never the key. Only its integrity can be
// checked.
func TestCopiedSnapshotTestsNoGuess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("member", 500)...)
	cfg := appConfig(path)
	if err := open(t, cfg).Close(ctx); err != nil { // saves
		t.Fatal(err)
	}
	key := dbKey(t, path, cfg.Snapshot)
	raw, err := os.ReadFile(cfg.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(t.TempDir(), "copied.sfb")
	if err := os.WriteFile(copied, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, key[:]) {
		t.Fatal("the file holds the key")
	}
	if id := snapshot.KeyID(key); !bytes.Equal(raw[32:48], id[:]) || !bytes.Equal(raw[48:64], make([]byte, 16)) {
		t.Fatalf("header bytes [32, 64) = %x, want the key id %x and zeros", raw[32:64], id)
	}
	guess := key
	guess[31] ^= 1
	for name, opts := range map[string][]snapshot.Option{"no key": nil, "a guessed key": {snapshot.WithKey(guess)}} {
		if s, err := snapshot.ReadFile(copied, opts...); s != nil || !errors.Is(err, snapshot.ErrWrongKey) {
			t.Fatalf("ReadFile with %s = %v, want ErrWrongKey", name, err)
		}
		if s, err := snapshot.Decode(bytes.NewReader(raw), opts...); s != nil || !errors.Is(err, snapshot.ErrWrongKey) {
			t.Fatalf("Decode with %s = %v, want ErrWrongKey", name, err)
		}
	}
	h, _, _, err := snapshot.VerifyFile(copied)
	if err != nil {
		t.Fatalf("the copy's integrity: %v", err)
	}
	if h.Params.Key != ([32]byte{}) {
		t.Fatal("the header read without a key has one")
	}
	if s, err := snapshot.ReadFile(copied, snapshot.WithKey(key)); err != nil || s.Items != 500 {
		t.Fatalf("with the database's key: %v", err)
	}
}

// asVersion1 rewrites the snapshot at snap as version 1 (its key in the
// header, the same bits and header fields) and, if record, records the
// new file in the database, as a build that wrote version 1 did: only the
// version and the key can refuse it. It returns the file's bytes.
func asVersion1(t *testing.T, path, snap string, key [32]byte, record bool) []byte {
	t.Helper()
	s, err := snapshot.ReadFile(snap, snapshot.WithKey(key))
	if err != nil {
		t.Fatal(err)
	}
	h := s.Header
	h.Version = snapshot.Version1
	var buf bytes.Buffer
	if err := snapshot.Encode(&buf, h, s.Image, snapshot.WithKey(key)); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	if err := os.WriteFile(snap, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if record {
		mustExec(t, rawDB(t, path), `INSERT INTO syncfilter_snapshots (source, checksum, generation, m)
			SELECT id, ?, ?, ? FROM syncfilter_sources WHERE tbl = 'records'`, raw[len(raw)-32:], int64(h.Generation), int64(h.Params.M))
	}
	return raw
}

// lowestVersion reads the source's lowest accepted snapshot version.
func lowestVersion(t *testing.T, path string) (lowest int) {
	t.Helper()
	if err := rawDB(t, path).QueryRow(`SELECT lowest_version FROM syncfilter_sources WHERE tbl = 'records'`).Scan(&lowest); err != nil {
		t.Fatal(err)
	}
	return lowest
}

// TestVersion1FileIsNotTrusted: a version 1 file beside a database whose
// lowest version is 2, recorded by the database and holding the
// database's own key, is refused by its version; SQLite answers, a
// rebuild replaces it with a version 2 file, and answers stay exact.
func TestVersion1FileIsNotTrusted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 1000)
	path := appDB(t, seed...)
	cfg := appConfig(path)
	if err := open(t, cfg).Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := lowestVersion(t, path); got != 2 {
		t.Fatalf("lowest version %d, want 2", got)
	}
	asVersion1(t, path, cfg.Snapshot, dbKey(t, path, cfg.Snapshot), true)
	ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close(ctx)
	probe := append(slices.Clone(seed[:300]), ids("never", 300)...)
	expect(t, ix, set(seed), probe) // in bypass or already rebuilt: exact either way
	waitServing(t, ix)
	if err := stats(ix).SnapshotError; !errors.Is(err, snapshot.ErrUnsupportedVersion) {
		t.Fatalf("SnapshotError = %v, want ErrUnsupportedVersion", err)
	}
	expect(t, ix, set(seed), probe)
	if h, err := snapshot.ReadHeader(cfg.Snapshot); err != nil || h.Version != snapshot.Version2 {
		t.Fatalf("the rebuild left version %d (%v)", h.Version, err)
	}
}

// TestDatabaseOfBeforeTheKeyTakesANewOne: a database written before
// version 2 (syncfilter_sources without the key's columns) beside its
// version 1 file: the file is not used (the database holds no key yet),
// the rebuild adds the columns and a new key (not the file's), saves
// version 2 and raises the lowest version to 2; the version 1 file put
// back (a backup) is refused.
func TestDatabaseOfBeforeTheKeyTakesANewOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 800)
	path := appDB(t, seed...)
	cfg := appConfig(path)
	if err := open(t, cfg).Close(ctx); err != nil {
		t.Fatal(err)
	}
	oldKey := dbKey(t, path, cfg.Snapshot)
	old := asVersion1(t, path, cfg.Snapshot, oldKey, true)
	needDropColumn(t, rawDB(t, path))
	mustExec(t, rawDB(t, path), `ALTER TABLE syncfilter_sources DROP COLUMN positions_key`)
	mustExec(t, rawDB(t, path), `ALTER TABLE syncfilter_sources DROP COLUMN lowest_version`)

	ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	probe := append(slices.Clone(seed[:200]), ids("never", 200)...)
	expect(t, ix, set(seed), probe)
	waitServing(t, ix)
	if err := stats(ix).SnapshotError; !errors.Is(err, snapshot.ErrWrongKey) {
		t.Fatalf("SnapshotError = %v, want ErrWrongKey (no key in the database)", err)
	}
	expect(t, ix, set(seed), probe)
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	newKey := dbKey(t, path, cfg.Snapshot)
	if newKey == ([32]byte{}) || newKey == oldKey {
		t.Fatal("the rebuild took no new key")
	}
	if got := lowestVersion(t, path); got != 2 {
		t.Fatalf("lowest version %d after a version 2 save, want 2", got)
	}
	if _, err := readSnap(t, path, cfg.Snapshot); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(cfg.Snapshot, old, 0o600); err != nil { // the backup's file
		t.Fatal(err)
	}
	c := cfg
	c.NoAutoRebuild = true
	ix = open(t, c)
	if err := stats(ix).SnapshotError; !errors.Is(err, snapshot.ErrUnsupportedVersion) {
		t.Fatalf("the version 1 file put back: SnapshotError = %v, want ErrUnsupportedVersion", err)
	}
	expect(t, ix, set(seed), probe)
}
