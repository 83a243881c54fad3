//go:build unix

package snapshot

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestNonRegularFilesAreNamed: a directory or a FIFO is not "truncated",
// and a FIFO without a writer is refused at once by every reader (a plain
// open would wait for a writer forever) and never replaced by a save.
func TestNonRegularFilesAreNamed(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, path := range []string{dir, fifo} {
			if _, err := ReadFile(path); !errors.Is(err, ErrNotRegular) || errors.Is(err, ErrTruncated) {
				t.Errorf("ReadFile(%s) = %v, want ErrNotRegular", path, err)
			}
			if _, _, _, err := VerifyFile(path); !errors.Is(err, ErrNotRegular) {
				t.Errorf("VerifyFile(%s) = %v", path, err)
			}
			if _, err := ReadHeader(path); !errors.Is(err, ErrNotRegular) {
				t.Errorf("ReadHeader(%s) = %v", path, err)
			}
			if _, err := ReadClaim(path); !errors.Is(err, ErrNotRegular) {
				t.Errorf("ReadClaim(%s) = %v", path, err)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a hang guard: the bug blocks forever
		t.Fatal("a reader blocked on a FIFO")
	}
	img, _ := build(t, testParams(t, 100), keys("k", 10))
	if err := WriteFile(fifo, Header{}, img, WithKey(testKey)); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("WriteFile over a FIFO = %v, want ErrNotRegular", err)
	}
	if info, err := os.Lstat(fifo); err != nil || info.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v, %v", info, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("a refused save left %d entries", len(entries))
	}
}

// TestWriteFileKeepsTheOwner: as root, a save gives the new file the
// owner and group of the one it replaces (the app's user keeps reading
// a file that a root cron job rewrote).
func TestWriteFileKeepsTheOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root; this test runs as uid", os.Geteuid())
	}
	path := filepath.Join(t.TempDir(), "filter.sfb")
	img, _ := build(t, testParams(t, 100), keys("k", 10))
	if err := WriteFile(path, Header{Generation: 1}, img, WithKey(testKey)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 65534, 65533); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, Header{Generation: 2}, img, WithKey(testKey)); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(path)
	st := info.Sys().(*syscall.Stat_t)
	if s, err := ReadFile(path, WithKey(testKey)); err != nil || s.Generation != 2 || st.Uid != 65534 || st.Gid != 65533 {
		t.Fatalf("after the save: owner %d:%d, generation %v (%v)", st.Uid, st.Gid, s, err)
	}
}
