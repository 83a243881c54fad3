package main

import (
	le "encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zeebo/blake3"
)

// sparseSnapshot writes a file with a real snapshot's header changed to
// claim m bits (both checksums of the header recomputed) and the length
// that claim announces, mostly a hole.
func sparseSnapshot(t *testing.T, m uint64) string {
	t.Helper()
	db := appDB(t, 100)
	real := filepath.Join(filepath.Dir(db), "real.sfb")
	run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", real).must(t, 0)
	raw, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	head := slices.Clone(raw[:192])
	le.LittleEndian.PutUint64(head[16:], m)
	le.LittleEndian.PutUint64(head[112:], m/8)
	sum := blake3.Sum256(head[:184])
	copy(head[184:], sum[:8])
	path := filepath.Join(filepath.Dir(db), "sparse.sfb")
	if err := os.WriteFile(path, head, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(192+m/8+32)); err != nil {
		t.Fatal(err)
	}
	return path
}

// maxRSS runs the command and returns its exit code and peak resident
// memory in bytes.
func maxRSS(t *testing.T, args ...string) (int, int64, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	peak := watchRSS(cmd.Process.Pid)
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, peakRSS(t, cmd, peak), errb.String()
}

// watchRSS samples the peak resident memory of the process pid (VmHWM in
// /proc/PID/status, in bytes) until it exits; the returned function
// stops sampling and returns the largest value seen (0: none).
//
// A child's rusage cannot say it: Linux starts a child's maxrss at the
// peak of the memory it replaced at exec, which for os/exec's vfork is
// the parent's, so once the test process itself held more than a limit
// (another test's load, the race detector), every child would seem to.
func watchRSS(pid int) func() int64 {
	var peak atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			_, after, found := strings.Cut(string(b), "VmHWM:")
			if err != nil || !found { // gone, or a zombie: its memory is released
				return
			}
			if fields := strings.Fields(after); len(fields) > 1 && fields[1] == "kB" {
				if kb, err := strconv.ParseInt(fields[0], 10, 64); err == nil && kb<<10 > peak.Load() {
					peak.Store(kb << 10)
				}
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		return peak.Load()
	}
}

// peakRSS is what watchRSS saw of the ended cmd or, if it saw nothing (no
// /proc here), the child's rusage, which may count the test's own peak.
func peakRSS(t *testing.T, cmd *exec.Cmd, watched func() int64) int64 {
	t.Helper()
	if n := watched(); n > 0 {
		return n
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Skip("no rusage on this platform")
	}
	return ru.Maxrss * 1024 // Linux reports KiB
}

// TestVerifyAndInspectStream: a sparse file claiming 2^34 bits (2 GiB) is
// read to its end and refused with peak memory far below the claim, by
// verify, inspect and query.
func TestVerifyAndInspectStream(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("hashes 2 GiB")
	}
	m := uint64(1 << 34)
	const limit = 64 << 20
	if slices.Contains(buildFlags, "-race") {
		m = 1 << 30 // the race detector slows hashing: claim 128 MiB, still twice the limit
	}
	path := sparseSnapshot(t, m)
	for _, args := range [][]string{{"verify", path}, {"inspect", path}, {"query", path, "some-key"}} {
		cmd := args[0]
		code, rss, stderr := maxRSS(t, args...)
		if code != exitSnapshot || !strings.Contains(stderr, "checksum") {
			t.Fatalf("%s: exit %d, %q", cmd, code, stderr)
		}
		if rss > limit {
			t.Fatalf("%s of a %d-bit claim peaked at %d MiB resident, limit %d MiB", cmd, m, rss>>20, limit>>20)
		}
		t.Logf("%s: %d MiB resident for a %d MiB claim", cmd, rss>>20, m>>23)
	}
}

// TestNotAFileIsNotAnInvalidSnapshot: a directory is named as such and is
// a runtime failure (1), not an invalid snapshot (3).
func TestNotAFileIsNotAnInvalidSnapshot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, cmd := range []string{"verify", "inspect"} {
		r := run(t, "", cmd, dir)
		if r.code != exitFailure || !strings.Contains(r.stderr, "not a regular file") {
			t.Fatalf("%s DIR: exit %d, %q", cmd, r.code, r.stderr)
		}
	}
}
