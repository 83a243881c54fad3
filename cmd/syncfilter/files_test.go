//go:build unix

package main

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/snapshot"
)

// These tests hold every path the command writes or reads to the one file
// rule (package internal/fsafe), through the binary.

// untouched records files' bytes (or kind) and checks later that they did
// not change.
func untouched(t *testing.T, paths ...string) func() {
	t.Helper()
	before := map[string]string{}
	for _, p := range paths {
		before[p] = describeFile(p)
	}
	return func() {
		t.Helper()
		for _, p := range paths {
			if got := describeFile(p); got != before[p] {
				t.Fatalf("%s changed: %.60q, was %.60q", p, got, before[p])
			}
		}
	}
}

func describeFile(p string) string {
	info, err := os.Lstat(p)
	switch {
	case err != nil:
		return "missing"
	case info.Mode()&os.ModeSymlink != 0:
		l, _ := os.Readlink(p)
		return "link to " + l
	case !info.Mode().IsRegular():
		return info.Mode().Type().String()
	}
	b, _ := os.ReadFile(p)
	return string(b)
}

// TestMetricsFileRefusals: --metrics-file is never the database (under
// any spelling, --force or not), never --out, never a directory or a
// FIFO, and a foreign file only with --force; every refusal comes before
// the scan: the database is not attached, no snapshot is written.
func TestMetricsFileRefusals(t *testing.T) {
	t.Parallel()
	db := plainApp(t)
	dir := filepath.Dir(db)
	out := filepath.Join(dir, "r.sfb")
	notes := filepath.Join(dir, "notes.prom")
	if err := os.WriteFile(notes, []byte("# the app's own metrics\napp_up 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "metrics.prom")
	if err := os.Symlink(db, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.prom")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := state(t, db)
	check := untouched(t, db, notes, link, fifo)
	for _, tc := range []struct {
		path  string
		force bool
		code  int
		want  string
	}{
		{db, false, 2, "is the database"},
		{db, true, 2, "is the database"},
		{link, true, 2, "is the database"},
		{db + "-journal", true, 2, "is the database"},
		{filepath.Join(dir, "sub", "..", "app.db"), true, 2, "is the database"},
		{out, false, 2, "is the snapshot --out"},
		{dir, false, 2, "is a directory"},
		{fifo, true, 1, "FIFO"},
		{notes, false, 1, "not syncfilter's metrics"},
	} {
		args := []string{"rebuild", "--db", db, "--table", "records", "--column", "id", "--out", out, "--metrics-file", tc.path}
		if tc.force {
			args = append(args, "--force")
		}
		r := run(t, "", args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Fatalf("--metrics-file %s (force %v): exit %d, %q; want %d and %q", tc.path, tc.force, r.code, r.stderr, tc.code, tc.want)
		}
		if state(t, db) != before {
			t.Fatalf("--metrics-file %s: the database was attached before the refusal", tc.path)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("--metrics-file %s: the snapshot was written before the refusal", tc.path)
		}
		check()
	}
	// --force replaces a foreign file (and only a regular one).
	run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", out, "--metrics-file", notes, "--force").must(t, 0)
	if got, _ := os.ReadFile(notes); !strings.HasPrefix(string(got), metricsHeader) {
		t.Fatalf("--force: %q", got)
	}
	if _, err := sqlDB(t, db).Exec(`INSERT INTO records (id) VALUES ('after-refusals')`); err != nil {
		t.Fatalf("the app's INSERT fails: %v", err)
	}
}

// TestForceNeverReplacesTheWALThroughALink: with the database named by a
// symbolic link, --out naming the live -wal beside the file it resolves
// to is refused, --force or not, and every row stays.
func TestForceNeverReplacesTheWALThroughALink(t *testing.T) {
	t.Parallel()
	real := appDB(t, 2000) // WAL mode
	app, err := sql.Open("sqlite3", "file:"+real+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	app.SetMaxOpenConns(1)
	for _, q := range []string{`PRAGMA wal_autocheckpoint = 0`, `INSERT INTO records (id) VALUES ('the-last-one')`} {
		if _, err := app.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(t.TempDir(), "app.db")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	check := untouched(t, real+"-wal")
	for _, out := range []string{real + "-wal", filepath.Join(filepath.Dir(real), ".", "app.db-wal")} {
		r := run(t, "", "rebuild", "--db", link, "--table", "records", "--column", "id", "--out", out, "--force")
		if r.code != 1 || !strings.Contains(r.stderr, "database's own file app.db-wal") {
			t.Fatalf("--out %s --force: exit %d, %q", out, r.code, r.stderr)
		}
		check()
	}
	var n int
	if err := app.QueryRow(`SELECT count(*) FROM records`).Scan(&n); err != nil || n != 2004 {
		t.Fatalf("rows after the refusals: %d, %v", n, err)
	}
}

// TestSymlinkedOut: --out that is a symbolic link updates the file the
// link names, atomically in that file's directory; the link stays, and
// the app reading through it sees every new snapshot.
func TestSymlinkedOut(t *testing.T) {
	t.Parallel()
	db := appDB(t, 300)
	data := t.TempDir()
	real := filepath.Join(data, "records.sfb")
	link := filepath.Join(filepath.Dir(db), "records.sfb")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		r := run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", link).must(t, 0)
		if !strings.Contains(r.stdout, "(-> "+real+")") {
			t.Fatalf("the summary does not name the file written: %q", r.stdout)
		}
		if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("round %d: the link was replaced by a file", round)
		}
		if _, _, _, err := snapshot.VerifyFile(real); err != nil {
			t.Fatal(err)
		}
		if _, err := sqlDB(t, db).Exec(`INSERT INTO records (id) VALUES (?)`, "late-"+string(rune('a'+round))); err != nil {
			t.Fatal(err)
		}
	}
	r := run(t, "", "check", "--db", db, "--table", "records", "--column", "id", "--snapshot", link, "rec-7", "late-b", "nope").must(t, 0)
	if r.stdout != "fetched\trec-7\nfetched\tlate-b\nmissing\tnope\n" || r.stderr != "" {
		t.Fatalf("check through the link: %q %q", r.stdout, r.stderr)
	}
	if entries, _ := os.ReadDir(data); len(entries) != 1 {
		t.Fatalf("the file's directory holds %d entries", len(entries))
	}
}

// TestFIFOAtTheSnapshotPath: a FIFO where a snapshot should be blocks no
// command: each ends at once, with the FIFO named (check and status
// answer from SQLite and say why), and the FIFO stays.
func TestFIFOAtTheSnapshotPath(t *testing.T) {
	t.Parallel()
	db := appDB(t, 100)
	dir := filepath.Dir(db)
	run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", filepath.Join(dir, "first.sfb")).must(t, 0)
	fifo := filepath.Join(dir, "records.sfb")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	src := []string{"--db", db, "--table", "records", "--column", "id"}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"verify", fifo}, 1, "FIFO"},
		{[]string{"inspect", fifo}, 1, "FIFO"},
		{[]string{"query", fifo, "rec-1"}, 1, "FIFO"},
		{append([]string{"check", "--snapshot", fifo, "rec-1"}, src...), 0, "FIFO"},
		{append([]string{"status", "--snapshot", fifo}, src...), 0, "FIFO"},
		{append([]string{"rebuild", "--out", fifo}, src...), 1, "FIFO"},
		{append([]string{"rebuild", "--out", fifo, "--force"}, src...), 1, "FIFO"},
		{append([]string{"detach", "--snapshot", fifo}, src...), 1, "FIFO"},
		{[]string{"check", "--db", fifo, "--table", "records", "--column", "id", "rec-1"}, 1, "FIFO"},
		{[]string{"rebuild", "--db", fifo, "--table", "records", "--column", "id", "--out", filepath.Join(dir, "x.sfb")}, 1, "FIFO"},
	} {
		r := runGuarded(t, 30*time.Second, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stdout+r.stderr, tc.want) {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q; want %d naming %q", tc.args, r.code, r.stdout, r.stderr, tc.code, tc.want)
		}
		if info, err := os.Lstat(fifo); err != nil || info.Mode()&os.ModeNamedPipe == 0 {
			t.Fatalf("%v replaced the FIFO", tc.args)
		}
	}
}

// runGuarded runs the command and fails the test if it has not ended
// after guard: a command blocked on a FIFO never ends by itself.
func runGuarded(t *testing.T, guard time.Duration, args ...string) result {
	t.Helper()
	done := make(chan result, 1)
	go func() { done <- runQuiet(args...) }()
	select {
	case r := <-done:
		return r
	case <-time.After(guard):
		t.Fatalf("%v still running after %v: blocked", args, guard)
	}
	return result{}
}

// runQuiet is run without a *testing.T (for goroutines).
func runQuiet(args ...string) result {
	cmd := execCommand(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Start()
	if err != nil {
		return result{code: -1, stderr: err.Error()}
	}
	go func() { time.Sleep(2 * time.Minute); _ = cmd.Process.Kill() }() // never leave a blocked child behind
	err = cmd.Wait()
	code := 0
	if err != nil {
		code = cmd.ProcessState.ExitCode()
	}
	return result{code, out.String(), errb.String()}
}

// TestTempLikeAppFileSurvives: "records.sfb.tmp-notes", an app's file,
// stale and holding the snapshot magic, survives every rebuild.
func TestTempLikeAppFileSurvives(t *testing.T) {
	t.Parallel()
	db := appDB(t, 100)
	dir := filepath.Dir(db)
	notes := filepath.Join(dir, "records.sfb.tmp-notes")
	if err := os.WriteFile(notes, append(snapshot.Magic[:], "the app's notes"...), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(notes, old, old); err != nil {
		t.Fatal(err)
	}
	check := untouched(t, notes)
	for range 2 {
		run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", filepath.Join(dir, "records.sfb"),
			"--metrics-file", filepath.Join(dir, "records.sfb.tmp-notes.prom")).must(t, 0)
		check()
	}
}
