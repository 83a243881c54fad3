package fsafe

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"time"
)

// SweepTemp removes the temporary files of the target base in dir that
// crashed writers left: named as IsTemp says, regular files, last
// modified before cutoff (a live writer touches its file with every chunk
// it writes), and whose content starts with magic or is empty (a writer
// killed before its first chunk). It returns the names removed; a file
// it cannot read or stat is left alone.
func SweepTemp(dir, base string, cutoff time.Time, magic []byte) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !IsTemp(e.Name(), base) || !e.Type().IsRegular() {
			continue
		}
		name := filepath.Join(dir, e.Name())
		if sweepable(name, cutoff, magic) {
			if os.Remove(name) == nil {
				removed = append(removed, e.Name())
			}
		}
	}
	return removed
}

// sweepable checks one candidate on an open descriptor, which must be
// the file the directory entry names (no swap between the checks).
func sweepable(name string, cutoff time.Time, magic []byte) bool {
	li, err := os.Lstat(name)
	if err != nil || !li.Mode().IsRegular() || !li.ModTime().Before(cutoff) {
		return false
	}
	f, info, err := OpenRegular(name)
	if err != nil {
		return false
	}
	defer f.Close()
	if !os.SameFile(li, info) {
		return false
	}
	if info.Size() == 0 {
		return true
	}
	head := make([]byte, len(magic))
	n, err := io.ReadFull(f, head)
	if err != nil && n < len(magic) {
		return false
	}
	return len(magic) > 0 && bytes.Equal(head, magic)
}
