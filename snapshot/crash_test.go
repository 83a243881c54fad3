package snapshot

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testexec"
	"github.com/syncfilter/syncfilter/syncfilter"
)

const crashHelperEnv = "SYNCFILTER_SNAPSHOT_CRASH_HELPER"

// TestCrashHelper is not a test: it is the child process of
// TestKilledWriterLeavesPreviousFile. It writes a 32 MiB snapshot slowly,
// printing a line after each chunk, until it is killed.
func TestCrashHelper(t *testing.T) {
	path := os.Getenv(crashHelperEnv)
	if path == "" {
		t.Skip("child process of TestKilledWriterLeavesPreviousFile")
	}
	p, err := syncfilter.NewParamsMK(32<<23, 7) // 32 MiB of bits
	if err != nil {
		t.Fatal(err)
	}
	p.Key = testKey
	f, err := syncfilter.New(p)
	if err != nil {
		t.Fatal(err)
	}
	img, err := f.Image(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	testHookChunkWritten = func() {
		fmt.Println("chunk")
		time.Sleep(5 * time.Millisecond)
	}
	if err := WriteFile(path, Header{Generation: 999}, img, WithKey(testKey)); err != nil {
		t.Fatal(err)
	}
	fmt.Println("done")
}

// TestKilledWriterLeavesPreviousFile kills a writing child process with
// SIGKILL at several points of its write: the snapshot at the path must
// stay the previous one, intact; the next writer sweeps the leftovers.
func TestKilledWriterLeavesPreviousFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "filter.sfb")
	prev, _ := build(t, testParams(t, 1000), keys("prev", 500))
	if err := WriteFile(path, Header{Generation: 1}, prev, WithKey(testKey)); err != nil {
		t.Fatal(err)
	}
	for _, killAfter := range []int{1, 3, 10, 20, 31} {
		cmd := testexec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashHelperEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines, chunks := bufio.NewScanner(out), 0
		for chunks < killAfter && lines.Scan() {
			if lines.Text() == "chunk" {
				chunks++
			}
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if chunks < killAfter {
			t.Fatalf("child wrote %d chunks before exiting, want %d", chunks, killAfter)
		}
		s, err := ReadFile(path, WithKey(testKey))
		if err != nil {
			t.Fatalf("killed after %d chunks: previous snapshot unreadable: %v", killAfter, err)
		}
		if s.Generation != 1 || s.Items != 500 {
			t.Fatalf("killed after %d chunks: read generation %d items %d, want the previous file", killAfter, s.Generation, s.Items)
		}
	}
	// The children left temporary files; once stale they are swept.
	temps, _ := filepath.Glob(path + ".tmp-*")
	if len(temps) == 0 {
		t.Fatal("killed writers left no temporary file: were they killed mid-write?")
	}
	old := time.Now().Add(-2 * StaleTemp)
	for _, name := range temps {
		_ = os.Chtimes(name, old, old)
	}
	if err := WriteFile(path, Header{Generation: 2}, prev, WithKey(testKey)); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 {
		t.Fatalf("after sweeping: %s", strings.Join(names, ", "))
	}
}
