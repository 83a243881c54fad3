//go:build !unix

package store

import "os"

// FileID identifies a file. Where there are no inodes it is the file's
// os.FileInfo, compared with os.SameFile; the number of names is unknown
// (taken as one).
type FileID struct {
	info  os.FileInfo
	Links uint64
}

// Same reports whether a and b are the same file.
func (a FileID) Same(b FileID) bool {
	return a.info != nil && b.info != nil && os.SameFile(a.info, b.info)
}

// Identify stats path, following symbolic links.
func Identify(path string) (FileID, error) {
	info, err := os.Stat(path)
	if err != nil {
		return FileID{}, err
	}
	return FileID{info: info, Links: 1}, nil
}
