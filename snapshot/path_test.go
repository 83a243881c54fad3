package snapshot

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/syncfilter/syncfilter/internal/fsafe"
)

// TestWriteFileThroughALink: a symbolic link at the path is followed: the
// file it points to is replaced, atomically in its own directory, and
// the link stays a link (the app reading through it sees the new file).
func TestWriteFileThroughALink(t *testing.T) {
	data, conf := t.TempDir(), t.TempDir()
	real := filepath.Join(data, "records.sfb")
	link := filepath.Join(conf, "records.sfb")
	if err := os.Symlink(real, link); err != nil {
		t.Skip(err)
	}
	img, _ := build(t, testParams(t, 100), keys("k", 10))
	for gen := uint64(1); gen <= 2; gen++ { // creates the file the link names, then replaces it
		if err := WriteFile(link, Header{Generation: gen}, img, WithKey(testKey)); err != nil {
			t.Fatal(err)
		}
		if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("the link was replaced: %v, %v", info, err)
		}
		if s, err := ReadFile(real, WithKey(testKey)); err != nil || s.Generation != gen {
			t.Fatalf("the file the link names: %v, %v", s, err)
		}
	}
	if entries, _ := os.ReadDir(conf); len(entries) != 1 {
		t.Fatalf("the link's directory holds %d entries", len(entries))
	}
	if entries, _ := os.ReadDir(data); len(entries) != 1 {
		t.Fatalf("the file's directory holds %d entries", len(entries))
	}
}

// TestWriteFileNeverReplacesAProtectedFile: a path that is a protected
// file under another spelling (here a link to the database's live -wal)
// is refused and the file keeps its bytes.
func TestWriteFileNeverReplacesAProtectedFile(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "app.db")
	wal := []byte("a live write-ahead log")
	if err := os.WriteFile(db+"-wal", wal, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "records.sfb")
	if err := os.Symlink(db+"-wal", link); err != nil {
		t.Skip(err)
	}
	img, _ := build(t, testParams(t, 100), keys("k", 10))
	for name, write := range map[string]func() error{
		"WriteFile": func() error {
			return WriteFile(link, Header{}, img, WithKey(testKey), WithProtected(fsafe.DatabaseFiles(db)...))
		},
	} {
		if err := write(); !errors.Is(err, fsafe.ErrProtected) {
			t.Fatalf("%s over the -wal = %v, want fsafe.ErrProtected", name, err)
		}
	}
	if got, _ := os.ReadFile(db + "-wal"); !bytes.Equal(got, wal) {
		t.Fatal("the -wal changed")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("a refused save left %d entries", len(entries))
	}
}
