package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/syncfilter/syncfilter/internal/testexec"
	"github.com/syncfilter/syncfilter/snapshot"
)

// buildFlags are those of the test binary (race_test.go adds -race), so
// that building the command reuses the compiled packages.
var buildFlags []string

var binary string

// TestMain builds the command once; the tests run it as a user would.
func TestMain(m *testing.M) {
	if os.Getenv(writerEnv) != "" { // a child process of a test: it needs no command
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "syncfilter-cli")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = os.Chmod(dir, 0o755) // tests run the binary as other users too
	binary = filepath.Join(dir, "syncfilter")
	args := append(append([]string{"build"}, buildFlags...), "-o", binary, ".")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	// On another CPU under an emulator (make cross), a script that runs
	// the binary through it, so that the shell of the README examples
	// runs it too.
	if binary, err = testexec.Wrap(binary); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// execCommand returns the command to run the binary with args. A binary
// built with -race exits without the second the race detector sleeps at
// exit by default (a race is reported all the same: the run fails).
func execCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	return cmd
}

func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	cmd := execCommand(args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

func (r result) must(t *testing.T, code int) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	return r
}

// appDB creates a database with records(id TEXT PRIMARY KEY) holding n
// ids "rec-<i>" and a few Unicode ones, one stored in NFD.
func appDB(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, _ := db.Begin()
	if _, err := tx.Exec(`CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := tx.Exec(`INSERT INTO records (id) VALUES (?)`, fmt.Sprintf("rec-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"caf\u00e9", "\u30c7\u30fc\u30bf", "cre\u0300me"} {
		if _, err := tx.Exec(`INSERT INTO records (id) VALUES (?)`, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	db := appDB(t, 3000)
	out := filepath.Join(filepath.Dir(db), "records.sfb")
	r := run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", out, "--json").must(t, 0)
	var sum summary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || sum.Rows != 3003 || sum.Snapshot != out || sum.M == 0 {
		t.Fatalf("rebuild --json: %q (%v)", r.stdout, err)
	}
	if strings.Contains(r.stderr, "\r") {
		t.Fatalf("progress off a terminal holds carriage returns: %q", r.stderr)
	}

	r = run(t, "", "verify", out).must(t, 0)
	if !strings.HasPrefix(r.stdout, "ok\t") {
		t.Fatalf("verify: %q", r.stdout)
	}

	r = run(t, "", "inspect", out, "--json").must(t, 0)
	var fields map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &fields); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"format_version", "m", "k", "layout", "normalization", "unicode_version",
		"dataset_id", "generation", "items", "created", "fill_ratio", "estimated_fpr", "bytes"} {
		if _, ok := fields[name]; !ok {
			t.Errorf("inspect --json lacks %q: %s", name, r.stdout)
		}
	}
	if fields["items"].(float64) != 3003 || fields["normalization"] != "nfc/1" || fields["format_version"].(float64) != 2 {
		t.Fatalf("inspect --json: %s", r.stdout)
	}
	run(t, "", "inspect", out).must(t, 0)

	// query: arguments, stdin lines, NUL-separated stdin; NFD finds NFC.
	r = run(t, "", "query", "--db", db, out, "rec-1", "nope-1", "cafe\u0301", "rec-2999").must(t, 0)
	wantQuery := "maybe\trec-1\nabsent\tnope-1\nmaybe\tcafe\u0301\nmaybe\trec-2999\n"
	if r.stdout != wantQuery {
		t.Fatalf("query: %q, want %q", r.stdout, wantQuery)
	}
	r = run(t, "rec-1\r\nnope-1\ncafe\u0301\nrec-2999\n", "query", "--db", db, out).must(t, 0)
	if r.stdout != wantQuery {
		t.Fatalf("query from stdin lines: %q", r.stdout)
	}
	r = run(t, "rec-1\x00line\nbreak\x00", "query", "--db", db, "-0", out).must(t, 0)
	if r.stdout != "maybe\trec-1\x00absent\tline\nbreak\x00" {
		t.Fatalf("query -0: %q", r.stdout)
	}

	// check: definitive answers, in input order, with and without snapshot.
	wantCheck := "fetched\trec-5\nmissing\tnope-2\nfetched\tcre\u0300me\nfetched\tcr\u00e8me\nmissing\tnope-3\n"
	for _, extra := range [][]string{nil, {"--snapshot", out}} {
		args := append([]string{"check", "--db", db, "--table", "records", "--column", "id"}, extra...)
		r = run(t, "", append(args, "rec-5", "nope-2", "cre\u0300me", "cr\u00e8me", "nope-3")...).must(t, 0)
		if r.stdout != wantCheck {
			t.Fatalf("check %v: %q, want %q", extra, r.stdout, wantCheck)
		}
		r = run(t, "rec-5\nnope-2\ncre\u0300me\ncr\u00e8me\nnope-3\n", args...).must(t, 0)
		if r.stdout != wantCheck {
			t.Fatalf("check %v from stdin: %q", extra, r.stdout)
		}
	}
	// Rows written after the snapshot are caught up by check.
	db2, _ := sql.Open("sqlite3", "file:"+db)
	if _, err := db2.Exec(`INSERT INTO records (id) VALUES ('late-1')`); err != nil {
		t.Fatal(err)
	}
	db2.Close()
	r = run(t, "", "check", "--db", db, "--table", "records", "--column", "id", "--snapshot", out, "late-1", "late-2").must(t, 0)
	if r.stdout != "fetched\tlate-1\nmissing\tlate-2\n" || r.stderr != "" {
		t.Fatalf("check after a later insert: %q %q", r.stdout, r.stderr)
	}
}

func TestDamagedSnapshot(t *testing.T) {
	t.Parallel()
	db := appDB(t, 500)
	out := filepath.Join(filepath.Dir(db), "records.sfb")
	run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", out).must(t, 0)
	raw, _ := os.ReadFile(out)
	for _, tc := range []struct {
		name   string
		bytes  []byte
		reason string
	}{
		{"flipped", flip(raw, len(raw)/2), "checksum mismatch"},
		{"cut", raw[:len(raw)-7], "truncated"},
		{"text", []byte("just text\n"), "not a snapshot"},
		{"future", version(raw, 9), "unsupported snapshot version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := filepath.Join(t.TempDir(), "bad.sfb")
			_ = os.WriteFile(bad, tc.bytes, 0o600)
			for _, args := range [][]string{{"verify", bad}, {"query", "--db", db, bad, "rec-1"}, {"inspect", bad}} {
				r := run(t, "", args...).must(t, 3)
				if !strings.Contains(r.stderr, tc.reason) || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
					t.Fatalf("%v: stderr %q stdout %q, want one line naming %q", args, r.stderr, r.stdout, tc.reason)
				}
			}
			// check still answers, from SQLite, and says why on stderr.
			r := run(t, "", "check", "--db", db, "--table", "records", "--column", "id", "--snapshot", bad, "rec-1", "nope").must(t, 0)
			if r.stdout != "fetched\trec-1\nmissing\tnope\n" || !strings.Contains(r.stderr, "answering from SQLite") {
				t.Fatalf("check with a bad snapshot: %q %q", r.stdout, r.stderr)
			}
		})
	}
	r := run(t, "", "verify", filepath.Join(t.TempDir(), "missing.sfb")).must(t, 1)
	if !strings.Contains(r.stderr, "no such file") {
		t.Fatalf("missing file: %q", r.stderr)
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x04
	return c
}

func version(b []byte, v byte) []byte {
	c := bytes.Clone(b)
	c[8] = v
	return c
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	db := appDB(t, 10)
	out := filepath.Join(filepath.Dir(db), "x.sfb")
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"rebuild", "--db", db, "--table", "records", "--column", "id"},
		{"rebuild", "--db", db, "--table", "records", "--column", "id", "--out", out, "--fpr", "2"},
		{"rebuild", "--db", db, "--table", "records", "--column", "id", "--out", out, "--capacity", "lots"},
		{"rebuild", "--db", db, "--table", "records", "--column", "id", "--out", out, "--headroom", "0.5"},
		{"rebuild", "--db", db, "--table", "records", "--column", "id", "--out", out, "extra"},
		{"rebuild", "--db", db, "--table", "rec ords", "--column", "id", "--out", out},
		{"rebuild", "--bogus"},
		{"rebuild", "--db"},
		{"inspect"},
		{"inspect", "a", "b"},
		{"verify"},
		{"query"},
		{"check", "--db", db, "--table", "records"},
		{"demo", "--records", "5"},
		{"help", "nope"},
	} {
		r := run(t, "", args...)
		if r.code != 2 || r.stderr == "" || strings.Contains(r.stderr, "goroutine ") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a message", args, r.code, r.stderr)
		}
	}
	// A table name the database does not have is not a usage error but a
	// runtime failure, with the name in the message.
	r := run(t, "", "rebuild", "--db", db, "--table", "nope", "--column", "id", "--out", out).must(t, 1)
	if !strings.Contains(r.stderr, "nope") {
		t.Fatalf("unknown table: %q", r.stderr)
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	r := run(t, "", "help").must(t, 0)
	for _, c := range commands {
		if !strings.Contains(r.stdout, c.name) {
			t.Errorf("help does not list %s", c.name)
		}
	}
	for _, c := range commands {
		if c.name == "help" {
			continue
		}
		r := run(t, "", c.name, "-h").must(t, 0)
		if !strings.Contains(r.stdout, "usage: syncfilter "+c.name) || r.stderr != "" {
			t.Errorf("%s -h: stdout %q, stderr %q", c.name, r.stdout, r.stderr)
		}
		run(t, "", "help", c.name).must(t, 0)
	}
}

func TestDemo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := run(t, "", "demo", "--dir", dir, "--records", "20000").must(t, 0)
	for _, want := range []string{"Wrong answers: 0", "questions alone", "false positives caught", "[background] rebuilt", "library first", "IN-list"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout+r.stderr, "\r") {
		t.Fatal("demo output holds carriage returns")
	}
	if _, _, _, err := snapshot.VerifyFile(filepath.Join(dir, "app.db.records.id.sfb")); err != nil {
		t.Fatalf("demo left no valid snapshot: %v", err)
	}
	run(t, "", "demo", "--dir", dir).must(t, 2) // refuses to reuse a database
}

// TestKilledRebuildLeavesPreviousFile kills the cron job at random moments:
// the snapshot at --out is always the previous one or the new one, valid.
func TestKilledRebuildLeavesPreviousFile(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns processes")
	}
	db := appDB(t, 100_000)
	out := filepath.Join(filepath.Dir(db), "records.sfb")
	args := []string{"rebuild", "--db", db, "--table", "records", "--column", "id", "--out", out}
	run(t, "", args...).must(t, 0)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 6; i++ {
		cmd := exec.Command(binary, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(r.IntN(400)) * time.Millisecond)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		s, _, _, err := snapshot.VerifyFile(out)
		if err != nil {
			t.Fatalf("kill %d: snapshot unreadable: %v", i, err)
		}
		if s.Items != 100_003 {
			t.Fatalf("kill %d: snapshot holds %d items", i, s.Items)
		}
	}
}
