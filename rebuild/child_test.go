package rebuild

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"

	"github.com/syncfilter/syncfilter/internal/testexec"
)

// The second process of the tests in migration_test.go, identity_test.go
// and journal_test.go: this test binary run again with
// TestChildProcessActs alone and an action in its environment. It is not
// a test on its own (it skips without the environment).

const (
	actEnv  = "SYNCFILTER_T18_ACT"  // what the child does
	argsEnv = "SYNCFILTER_T18_ARGS" // its arguments, separated by "\x1f"
)

// TestChildProcessActs is not a test: it is the second process of other
// tests. It runs the action named in its environment.
func TestChildProcessActs(t *testing.T) {
	act := os.Getenv(actEnv)
	if act == "" {
		t.Skip("child process of the identity, migration and journal tests")
	}
	args := strings.Split(os.Getenv(argsEnv), "\x1f")
	fn, ok := childActs[act]
	if !ok {
		t.Fatalf("unknown child action %q", act)
	}
	fn(t, args)
}

// childActs are the actions a child process can run.
var childActs = map[string]func(t *testing.T, args []string){}

// child runs this test binary as a second process doing act with args,
// and fails the test if it fails.
func child(t *testing.T, act string, args ...string) string {
	t.Helper()
	wait := startChild(t, "TestChildProcessActs", actEnv+"="+act, argsEnv+"="+strings.Join(args, "\x1f"), quickExit())
	out, err := wait()
	if err != nil {
		t.Fatalf("child process %s %q: %v\n%s", act, args, err, out)
	}
	return out
}

// streamChild starts act in a second process and returns its stdout line
// by line, and the command (the caller waits for it).
func streamChild(t *testing.T, dir string, act string, args ...string) (*exec.Cmd, *bufio.Scanner, *strings.Builder) {
	t.Helper()
	cmd := testexec.Command(os.Args[0], "-test.run=^TestChildProcessActs$", "-test.count=1", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), actEnv+"="+act, argsEnv+"="+strings.Join(args, "\x1f"), quickExit())
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, bufio.NewScanner(out), stderr
}

// quickExit is the child's GORACE setting: the race detector's options
// of this process, without the second it sleeps at exit by default (a
// child's races are reported all the same: it fails, and so does the
// test that started it).
func quickExit() string {
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
}

// waitLine reads lines until one starts with prefix (or the stream ends).
func waitLine(t *testing.T, lines *bufio.Scanner, prefix string) string {
	t.Helper()
	for lines.Scan() {
		if l := lines.Text(); strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("child ended without a line %q: %v", prefix, lines.Err())
	return ""
}

// drain reads the rest of a child's stdout.
func drain(lines *bufio.Scanner) string {
	var b strings.Builder
	for lines.Scan() {
		b.WriteString(lines.Text())
		b.WriteByte('\n')
	}
	return b.String()
}

// tableIDs returns the ids a table stores (text only), read on a
// connection of its own: the reference the index's answers must match.
func tableIDs(t testing.TB, path, table string) map[string]bool {
	t.Helper()
	db, err := testdriver.Open(path, testdriver.App{ReadOnly: true, BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id FROM "` + table + `" WHERE typeof(id) = 'text'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// libraryObjects lists the library's objects in sqlite_master as
// "type name on tbl_name", sorted.
func libraryObjects(t testing.TB, path string) []string {
	t.Helper()
	db, err := testdriver.Open(path, testdriver.App{ReadOnly: true, BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT type || ' ' || name || ' on ' || tbl_name FROM sqlite_master WHERE name LIKE 'syncfilter%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// dirEntries lists a directory's names, sorted.
func dirEntries(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// integrity runs PRAGMA integrity_check on its own connection.
func integrity(t testing.TB, path string) {
	t.Helper()
	db, err := testdriver.Open(path, testdriver.App{BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check of %s: %q, %v", path, check, err)
	}
}

// waitFor polls cond (no timing assertion: a generous bound only turns a
// hang into a failure).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 60s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func init() {
	// exec: path, mode, statements: runs each statement (one Exec each)
	// on one connection whose DSN sets the journal mode ("" for none).
	childActs["exec"] = func(t *testing.T, args []string) {
		db := modeConn(t, args[0], args[1])
		db.SetMaxOpenConns(1)
		for _, q := range args[2:] {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	// insert: path, mode, table, prefix, n: n rows prefix-0000000...
	childActs["insert"] = func(t *testing.T, args []string) {
		db := modeConn(t, args[0], args[1])
		n, err := strconv.Atoi(args[4])
		if err != nil {
			t.Fatal(err)
		}
		insertInto(t, db, args[2], ids(args[3], n)...)
	}
}

// execIn runs statements in a second process (see the "exec" action).
func execIn(t *testing.T, path, mode string, stmts ...string) {
	t.Helper()
	child(t, "exec", append([]string{path, mode}, stmts...)...)
}

// insertIn inserts n ids prefix-... into table in a second process.
func insertIn(t *testing.T, path, mode, table, prefix string, n int) []string {
	t.Helper()
	child(t, "insert", path, mode, table, prefix, strconv.Itoa(n))
	return ids(prefix, n)
}

// exact checks Missing and Fetched of every probe key against the
// reference set (stored ids), reporting the keys answered wrongly.
func exact(t testing.TB, ix *Index, fetched map[string]bool, probe []string) {
	t.Helper()
	ctx := context.Background()
	missing, err := missingList(ctx, ix, probe)
	if err != nil {
		t.Fatalf("Missing: %v", err)
	}
	isMissing := map[string]bool{}
	for _, k := range missing {
		isMissing[k] = true
	}
	var wrongMissing, wrongFetched []string
	seen := map[string]bool{}
	for _, k := range probe {
		if seen[k] {
			continue
		}
		seen[k] = true
		if fetched[k] && isMissing[k] {
			wrongMissing = append(wrongMissing, k)
		}
		if !fetched[k] && !isMissing[k] {
			wrongFetched = append(wrongFetched, k)
		}
		got, err := ix.Fetched(ctx, k)
		if err != nil {
			t.Fatalf("Fetched(%q): %v", k, err)
		}
		if got != fetched[k] {
			t.Errorf("Fetched(%q) = %v, want %v", k, got, fetched[k])
		}
	}
	if len(missing) != len(seen)-len(stored(fetched, probe)) {
		t.Errorf("Missing listed %d keys, want %d", len(missing), len(seen)-len(stored(fetched, probe)))
	}
	if len(wrongMissing)+len(wrongFetched) > 0 {
		t.Fatalf("Missing: %d stored ids listed missing %.120v; %d never-stored ids not listed %.120v",
			len(wrongMissing), wrongMissing, len(wrongFetched), wrongFetched)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// stored returns the distinct probe keys in fetched.
func stored(fetched map[string]bool, probe []string) map[string]bool {
	out := map[string]bool{}
	for _, k := range probe {
		if fetched[k] {
			out[k] = true
		}
	}
	return out
}
