package main

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCommandsLeaveNoIDOrKeyBesideTheDatabase: the cron job's files
// beside the database (its snapshot, through --out and --all, and its
// metrics files) hold no stored id and not the key of the positions that
// the database holds; query reads the snapshot with that key (--db).
func TestCommandsLeaveNoIDOrKeyBesideTheDatabase(t *testing.T) {
	t.Parallel()
	db := appDB(t, 300) // rec-0 … rec-299 and three non-ASCII ids
	dir := filepath.Dir(db)
	out := filepath.Join(dir, "records.sfb")
	src := []string{"--db", db, "--table", "records", "--column", "id"}
	run(t, "", append([]string{"rebuild", "--out", out, "--metrics-file", filepath.Join(dir, "one.prom")}, src...)...).must(t, 0)
	run(t, "", "rebuild", "--db", db, "--all", "--metrics-file", filepath.Join(dir, "all.prom")).must(t, 0)
	if r := run(t, "", "query", "--db", db, out, "rec-7", "never-7").must(t, 0); r.stdout != "maybe\trec-7\nabsent\tnever-7\n" {
		t.Fatalf("query --db: %q", r.stdout)
	}
	var key []byte
	if err := sqlDB(t, db).QueryRow(`SELECT positions_key FROM syncfilter_sources`).Scan(&key); err != nil || len(key) != 32 {
		t.Fatalf("the database's key: %x, %v", key, err)
	}
	secrets := [][]byte{key, []byte(hex.EncodeToString(key)), []byte(strings.ToUpper(hex.EncodeToString(key)))}
	for _, id := range []string{"rec-1", "rec-299", "caf\u00e9", "\u30c7\u30fc\u30bf", "cre\u0300me", "cr\u00e8me"} {
		secrets = append(secrets, []byte(id))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range entries {
		name := filepath.Join(dir, e.Name())
		if slices.Contains([]string{db, db + "-wal", db + "-shm", db + "-journal"}, name) {
			continue
		}
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		seen++
		for _, s := range secrets {
			if bytes.Contains(raw, s) {
				t.Errorf("%s holds %q", e.Name(), s)
			}
		}
	}
	if seen < 3 { // the snapshot (--all writes where the last save was recorded), two metrics files
		t.Fatalf("%d files beside the database, want 3", seen)
	}
}
