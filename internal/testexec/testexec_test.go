package testexec

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const childEnv = "SYNCFILTER_TESTEXEC_CHILD"

// TestChild is not a test: it is the child process of the tests below.
// It prints its arguments after the test flags and the probe variable.
func TestChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("child process of TestCommandRunsThisBinary")
	}
	os.Stdout.WriteString("child: " + strings.Join(os.Args[1:], " ") + " probe=" + os.Getenv("SYNCFILTER_TESTEXEC_PROBE") + "\n")
}

// childLine returns the line the child printed.
func childLine(out []byte) string {
	for _, line := range strings.Split(string(out), "\n") {
		if s, ok := strings.CutPrefix(line, "child: "); ok {
			return s
		}
	}
	return "(nothing: " + string(out) + ")"
}

// withProbe puts `env SYNCFILTER_TESTEXEC_PROBE=1` in front of the
// emulator the tests run under (none on a native run), so that a child
// shows whether it was started through the emulator command.
func withProbe(t *testing.T) {
	t.Setenv(Env, "env SYNCFILTER_TESTEXEC_PROBE=1 "+os.Getenv(Env))
	t.Setenv(childEnv, "1")
}

func TestCommandRunsThisBinary(t *testing.T) {
	withProbe(t)
	out, err := Command(os.Args[0], "-test.run=^TestChild$", "a b").CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if got, want := childLine(out), "-test.run=^TestChild$ a b probe=1"; got != want {
		t.Fatalf("child printed %q, want %q", got, want)
	}
}

func TestCommandIsPlainWithoutEmulator(t *testing.T) {
	t.Setenv(Env, " ")
	cmd := Command("/bin/true", "x")
	if got := strings.Join(cmd.Args, " "); got != "/bin/true x" || cmd.Path != "/bin/true" {
		t.Fatalf("command %q (path %s), want /bin/true x", got, cmd.Path)
	}
}

// TestWrapRunsFromAShell: the wrapper of this binary, found on PATH by a
// shell, runs it through the emulator with the arguments as given.
func TestWrapRunsFromAShell(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	withProbe(t)
	bin := filepath.Join(t.TempDir(), "it's a test")
	raw, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper, err := Wrap(bin)
	if err != nil {
		t.Fatal(err)
	}
	if wrapper == bin || filepath.Base(wrapper) != filepath.Base(bin) {
		t.Fatalf("wrapper %s of %s", wrapper, bin)
	}
	cmd := exec.Command("sh", "-c", `"it's a test" -test.run='^TestChild$' "a  b"`)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(wrapper)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("wrapper: %v\n%s", err, out)
	}
	if got, want := childLine(out), "-test.run=^TestChild$ a  b probe=1"; got != want {
		t.Fatalf("child printed %q, want %q", got, want)
	}
}

func TestWrapIsTheBinaryWithoutEmulator(t *testing.T) {
	t.Setenv(Env, "")
	if got, err := Wrap("/some/binary"); err != nil || got != "/some/binary" {
		t.Fatalf("Wrap = %q, %v; want the binary itself", got, err)
	}
}
