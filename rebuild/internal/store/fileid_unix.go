//go:build unix

package store

import "syscall"

// FileID identifies a file: its device and inode, and how many names
// (hard links) it has.
type FileID struct {
	dev, ino uint64
	Links    uint64
}

// Same reports whether a and b are the same file.
func (a FileID) Same(b FileID) bool { return a.dev == b.dev && a.ino == b.ino }

// Identify stats path, following symbolic links. It does not allocate.
func Identify(path string) (FileID, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return FileID{}, err
	}
	return FileID{dev: uint64(st.Dev), ino: uint64(st.Ino), Links: uint64(st.Nlink)}, nil
}
