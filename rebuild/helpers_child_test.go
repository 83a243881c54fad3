package rebuild

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testexec"
)

// The second process of the tests that need one (the first attach, the
// file at the path, journal modes, migrations, stored spellings, the key
// property): this test binary run again with TestChildProcessActs alone
// and an action in its environment. It is not a test on its own (it skips
// without the environment).

const (
	actEnv  = "SYNCFILTER_T18_ACT"  // what the child does
	argsEnv = "SYNCFILTER_T18_ARGS" // its arguments, separated by "\x1f"
)

// TestChildProcessActs is not a test: it is the second process of other
// tests. It runs the action named in its environment.
func TestChildProcessActs(t *testing.T) {
	t.Parallel()
	act := os.Getenv(actEnv)
	if act == "" {
		t.Skip("child process of other tests")
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

// startChild starts this test binary again, running only the test named
// run (a child-process helper that skips itself without its environment
// variables), with env added; wait returns its error and output.
func startChild(t *testing.T, run string, env ...string) (wait func() (string, error)) {
	t.Helper()
	cmd := testexec.Command(os.Args[0], "-test.run=^"+run+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func() (string, error) { err := cmd.Wait(); return out.String(), err }
}
