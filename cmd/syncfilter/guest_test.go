package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plainApp creates an app database as an app that never chose a journal
// mode would: records(id TEXT PRIMARY KEY) with ids "rec-<i>", one stored
// in NFD, and a NOCASE table.
func plainApp(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.db")
	db := sqlDB(t, path)
	for _, q := range []string{
		`CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`,
		`CREATE TABLE tags (id TEXT COLLATE NOCASE PRIMARY KEY)`,
		`INSERT INTO records (id) VALUES ('rec-1'), ('rec-2'), ('cafe` + "\u0301" + `')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func sqlDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// state is what a command must leave alone: the schema and journal mode.
func state(t *testing.T, path string) string {
	t.Helper()
	db := sqlDB(t, path)
	defer db.Close()
	var b strings.Builder
	rows, err := db.Query(`SELECT type, name, tbl_name, rootpage, coalesce(sql, '') FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var a, c, d, e string
		var root int
		_ = rows.Scan(&a, &c, &d, &root, &e)
		fmt.Fprintf(&b, "%s|%s|%s|%d|%s\n", a, c, d, root, e)
	}
	rows.Close()
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	return b.String() + "journal_mode=" + mode
}

func TestRefusedRebuildLeavesTheAppWorking(t *testing.T) {
	t.Parallel()
	db := plainApp(t)
	out := filepath.Join(filepath.Dir(db), "r.sfb")
	before := state(t, db)
	for _, args := range [][]string{
		{"--column", "idd"},                                   // a typo
		{"--table", "tags", "--column", "id"},                 // NOCASE: answers could not be exact
		{"--table", "records", "--column", "body"},            // not indexed
		{"--table", "records", "--column", "id", "--out", db}, // the database itself
		{"--table", "records", "--column", "id", "--out", db + "-wal"},
	} {
		full := append([]string{"rebuild", "--db", db, "--table", "records", "--out", out}, args...)
		r := run(t, "", full...)
		if r.code == 0 {
			t.Fatalf("%v: exit 0", args)
		}
		if after := state(t, db); after != before {
			t.Fatalf("%v left a trace:\n%s", args, after)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("%v wrote %s", args, out)
		}
		if !strings.Contains(r.stderr, "syncfilter rebuild: ") || strings.Count(r.stderr, "\n") > 2 {
			t.Fatalf("%v: stderr %q", args, r.stderr)
		}
	}
	r := run(t, "", "rebuild", "--db", db, "--table", "tags", "--column", "id", "--out", out)
	if !strings.Contains(r.stderr, "declare it TEXT") {
		t.Fatalf("the NOCASE refusal does not say what to declare: %q", r.stderr)
	}
	if _, err := sqlDB(t, db).Exec(`INSERT INTO records (id) VALUES ('app-insert')`); err != nil {
		t.Fatalf("the app's INSERT fails: %v", err)
	}
}

func TestRebuildNeverReplacesAForeignFile(t *testing.T) {
	t.Parallel()
	db := plainApp(t)
	notes := filepath.Join(filepath.Dir(db), "notes.txt")
	if err := os.WriteFile(notes, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"rebuild", "--db", db, "--table", "records", "--column", "id", "--out", notes}
	r := run(t, "", base...)
	if r.code == 0 || !strings.Contains(r.stderr, "not a snapshot") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if got, _ := os.ReadFile(notes); string(got) != "keep me\n" {
		t.Fatal("notes.txt replaced")
	}
	run(t, "", append(base, "--force")...).must(t, 0)
	run(t, "", "verify", notes).must(t, 0)
	// --force never covers the database.
	r = run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", filepath.Join(filepath.Dir(db), ".", "app.db"), "--force")
	if r.code == 0 {
		t.Fatal("rebuild --out DATABASE --force exit 0")
	}
	if _, err := sqlDB(t, db).Exec(`INSERT INTO records (id) VALUES ('still-a-database')`); err != nil {
		t.Fatal(err)
	}
}

func TestCheckIsReadOnly(t *testing.T) {
	t.Parallel()
	db := plainApp(t)
	other := plainApp(t)
	otherSnap := filepath.Join(filepath.Dir(other), "other.sfb")
	run(t, "", "rebuild", "--db", other, "--table", "records", "--column", "id", "--out", otherSnap).must(t, 0)
	snapBefore, _ := os.ReadFile(otherSnap)
	before := state(t, db)
	dbBefore, _ := os.ReadFile(db)

	// Another connection holds a write transaction meanwhile.
	w := sqlDB(t, db)
	w.SetMaxOpenConns(1)
	tx, err := w.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO records (id) VALUES ('uncommitted')`); err != nil {
		t.Fatal(err)
	}
	r := run(t, "", "check", "--db", db, "--table", "records", "--column", "id", "--snapshot", otherSnap,
		"rec-1", "caf\u00e9", "uncommitted", "never").must(t, 0)
	if want := "fetched\trec-1\nfetched\tcaf\u00e9\nmissing\tuncommitted\nmissing\tnever\n"; r.stdout != want {
		t.Fatalf("check: %q, want %q", r.stdout, want)
	}
	if !strings.Contains(r.stderr, "no filter attached") {
		t.Fatalf("stderr %q", r.stderr)
	}
	_ = tx.Rollback()
	if after := state(t, db); after != before {
		t.Fatalf("check changed the database:\n%s", after)
	}
	if dbAfter, _ := os.ReadFile(db); !bytes.Equal(dbBefore, dbAfter) {
		t.Fatal("check changed the database file")
	}
	if snapAfter, _ := os.ReadFile(otherSnap); !bytes.Equal(snapBefore, snapAfter) {
		t.Fatal("check rewrote another database's snapshot")
	}
}

func TestDetachCommand(t *testing.T) {
	t.Parallel()
	db := plainApp(t)
	pristine := state(t, db)
	snap := filepath.Join(filepath.Dir(db), "r.sfb")
	run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", snap).must(t, 0)
	if state(t, db) == pristine {
		t.Fatal("rebuild attached nothing?")
	}
	// Another dataset's snapshot is not deleted, and nothing is detached.
	other := plainApp(t)
	otherSnap := filepath.Join(filepath.Dir(other), "other.sfb")
	run(t, "", "rebuild", "--db", other, "--table", "records", "--column", "id", "--out", otherSnap).must(t, 0)
	otherBytes, _ := os.ReadFile(otherSnap)
	attached := state(t, db)
	r := run(t, "", "detach", "--db", db, "--table", "records", "--column", "id", "--snapshot", otherSnap)
	if r.code != 1 || !strings.Contains(r.stderr, "leave") {
		t.Fatalf("detach --snapshot FOREIGN: exit %d, %q", r.code, r.stderr)
	}
	if got, _ := os.ReadFile(otherSnap); !bytes.Equal(got, otherBytes) {
		t.Fatal("detach deleted or changed another dataset's snapshot")
	}
	if state(t, db) != attached {
		t.Fatal("a refused detach changed the database")
	}
	if _, err := sqlDB(t, db).Exec(`INSERT INTO records (id) VALUES ('after-refused-detach')`); err != nil {
		t.Fatal(err)
	}
	r = run(t, "", "detach", "--db", db, "--table", "RECORDS", "--column", "id", "--snapshot", snap).must(t, 0)
	if !strings.Contains(r.stdout, "removed") {
		t.Fatalf("detach: %q", r.stdout)
	}
	// The schema and the journal mode are as before.
	if got, want := state(t, db), pristine; got != want {
		t.Fatalf("after detach:\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(snap); !os.IsNotExist(err) {
		t.Fatal("detach --snapshot left the snapshot")
	}
	r = run(t, "", "detach", "--db", db, "--table", "records", "--column", "id")
	if r.code != 1 || !strings.Contains(r.stderr, "not attached") {
		t.Fatalf("second detach: exit %d, %q", r.code, r.stderr)
	}
	r = run(t, "", "detach", "--db", db)
	if r.code != 2 || !strings.Contains(r.stderr, "--table") {
		t.Fatalf("detach without flags: exit %d, %q", r.code, r.stderr)
	}
}
