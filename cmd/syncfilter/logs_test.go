package main

import (
	"bytes"
	"database/sql"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var stamped = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ `)

// TestEveryStderrLineIsStamped: off a terminal, every line on stderr
// starts with an RFC 3339 time, failures, usage errors and warnings
// included.
func TestEveryStderrLineIsStamped(t *testing.T) {
	t.Parallel()
	db := appDB(t, 50)
	dir := filepath.Dir(db)
	snap := filepath.Join(dir, "r.sfb")
	run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", snap).must(t, 0)
	src := []string{"--db", db, "--table", "records", "--column", "id"}
	for _, tc := range []struct {
		stdin string
		args  []string
	}{
		{"", nil},
		{"", []string{"frobnicate"}},
		{"", []string{"rebuild", "--bogus"}},
		{"", append([]string{"rebuild", "--table", "nope"}, "--db", db, "--column", "id", "--out", snap)},
		{"", []string{"verify", filepath.Join(dir, "missing.sfb")}},
		{"", []string{"query", db, "k"}},
		{"rec-1\nbad\xff\n", []string{"query", "--db", db, snap}},
		{"rec-1\nbad\xff\n", append([]string{"check", "--snapshot", db}, src...)},
		{"", append([]string{"detach", "--snapshot", db}, src...)},
		{"", append([]string{"status", "--table", "nope"}, "--db", db, "--column", "id")},
	} {
		r := run(t, tc.stdin, tc.args...)
		if r.code == 0 || r.stderr == "" {
			t.Fatalf("%v: exit %d, stderr %q: a failure or warning was expected", tc.args, r.code, r.stderr)
		}
		for _, line := range strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n") {
			if !stamped.MatchString(line) {
				t.Fatalf("%v: unstamped stderr line %q", tc.args, line)
			}
		}
	}
}

// TestSummaryIsTheLastLine: with stdout and stderr in one log (cron's
// `>> log 2>&1`), the summary of a rebuild is its last line, also with
// warnings and a slow scan's progress lines.
func TestSummaryIsTheLastLine(t *testing.T) {
	t.Parallel()
	// Enough rows for many reports: the callback is handed the latest
	// value, so a scan of a few reports may finish before the first line.
	db := appDB(t, 0)
	app, err := sql.Open("sqlite3", db)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if _, err := app.Exec(`INSERT INTO records (id) WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 299999) SELECT 'rec-' || i FROM c`); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(filepath.Dir(db), "r.sfb")
	for _, extra := range [][]string{nil, {"--json"}} {
		args := []string{"rebuild", "--db", db, "--table", "records", "--column", "id", "--out", out, "--progress-every", "1ns"} // a line at every report
		cmd := exec.Command(binary, append(args, extra...)...)
		var log bytes.Buffer
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %s", err, log.String())
		}
		lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
		if len(lines) < 2 || !strings.Contains(lines[len(lines)-2], "rows") {
			t.Fatalf("%v: no progress lines before the summary: %q", extra, log.String())
		}
		last := lines[len(lines)-1]
		if !strings.Contains(last, "wrote ") && !strings.HasPrefix(last, "{") {
			t.Fatalf("%v: the last line is not the summary: %q", extra, last)
		}
	}
}
