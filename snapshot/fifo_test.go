//go:build unix

package snapshot

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestNonRegularFilesAreNamed: a directory or a FIFO is not "truncated".
func TestNonRegularFilesAreNamed(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	// Opening a FIFO blocks until a writer comes: give it one.
	go func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			_, _ = f.Write(encodeTestSnapshot(t))
			f.Close()
		}
	}()
	for _, path := range []string{dir, fifo} {
		if _, err := ReadFile(path); !errors.Is(err, ErrNotRegular) || errors.Is(err, ErrTruncated) {
			t.Fatalf("ReadFile(%s) = %v, want ErrNotRegular", path, err)
		}
	}
	if _, _, _, err := VerifyFile(dir); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("VerifyFile(dir) = %v", err)
	}
}
