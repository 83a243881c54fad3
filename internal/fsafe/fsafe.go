package fsafe

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Errors returned by CheckWrite and OpenRegular, wrapped with the path;
// test with errors.Is.
var (
	// ErrProtected: the path is, under some spelling, one of the files
	// the caller protects (the database or its -wal, -shm or -journal).
	ErrProtected = errors.New("protected file")

	// ErrNotRegular: the path names a directory, a FIFO, a device, a
	// socket or another file that is not a regular file.
	ErrNotRegular = errors.New("not a regular file")
)

// maxLinks bounds the symbolic links followed when resolving one path,
// as the kernel does (ELOOP).
const maxLinks = 40

// Siblings returns the database file at path and the files SQLite keeps
// beside it under that name: its write-ahead log, its shared-memory index
// and its rollback journal. The one list of SQLite's file names.
func Siblings(path string) []string {
	return []string{path, path + "-wal", path + "-shm", path + "-journal"}
}

// DatabaseFiles returns the files of the SQLite database at db (Siblings),
// both as spelled and with symbolic links resolved (SQLite opens the
// resolved path and names its other files after it).
func DatabaseFiles(db string) []string {
	out := Siblings(db)
	if r, err := Resolve(db); err == nil && r != db {
		out = append(out, Siblings(r)...)
	}
	return out
}

// Resolve returns the absolute path of the file that path names once
// every symbolic link is followed, the last one included, as the kernel
// follows them: a ".." after a link steps out of the link's target, not
// out of the link's directory. A link to a file that does not exist
// resolves to that file's path (a write creates it there). A path whose
// directory does not exist is returned cleaned, as it is: no file can be
// there.
func Resolve(path string) (string, error) {
	p := path
	if !filepath.IsAbs(p) {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		p = wd + string(filepath.Separator) + p // not Join: that would clean ".." lexically
	}
	for range maxLinks {
		dir, base := filepath.Split(p)
		if base == "" || base == "." || base == ".." {
			r, err := filepath.EvalSymlinks(p)
			if errors.Is(err, fs.ErrNotExist) {
				return filepath.Clean(p), nil
			}
			return r, err
		}
		rdir, err := filepath.EvalSymlinks(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.Clean(p), nil
		}
		if err != nil {
			return "", err
		}
		p = filepath.Join(rdir, base)
		info, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
		if err != nil {
			return "", err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		link, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = rdir + string(filepath.Separator) + link
		}
		p = link
	}
	return "", &fs.PathError{Op: "resolve", Path: path, Err: errors.New("too many levels of symbolic links")}
}

// Target is the file a write to Path replaces (or creates).
type Target struct {
	Path string      // as given
	File string      // Path resolved (Resolve): the file renamed over
	Dir  string      // the directory of File, where temporary files go
	Link bool        // Path is a symbolic link (the link stays; File is replaced)
	Info os.FileInfo // of File; nil if it does not exist yet
}

// CheckWrite returns the file that a write to path would replace, if it
// may: it is none of the protected files under any spelling (resolved,
// or the same device and inode), and it is a regular file or does not
// exist yet.
func CheckWrite(path string, protected ...string) (Target, error) {
	file, err := Resolve(path)
	if err != nil {
		return Target{}, err
	}
	t := Target{Path: path, File: file, Dir: filepath.Dir(file)}
	if li, err := os.Lstat(path); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		t.Link = true
	}
	info, err := os.Lstat(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return t, err
	default:
		t.Info = info
	}
	for _, p := range protected {
		if same(file, info, p) {
			return t, &fs.PathError{Op: "replace", Path: path, Err: fmt.Errorf("it is %s: %w", p, ErrProtected)}
		}
	}
	if info != nil && !info.Mode().IsRegular() {
		return t, &fs.PathError{Op: "replace", Path: path, Err: fmt.Errorf("%s: %w", Kind(info.Mode()), ErrNotRegular)}
	}
	return t, nil
}

// same reports whether the resolved file (info: its Lstat, nil if it does
// not exist) is p under another spelling.
func same(file string, info os.FileInfo, p string) bool {
	rp, err := Resolve(p)
	if err != nil {
		rp = filepath.Clean(p)
		if abs, err := filepath.Abs(p); err == nil {
			rp = abs
		}
	}
	if equalPath(file, rp) {
		return true
	}
	if info == nil {
		return false
	}
	pi, err := os.Stat(p)
	return err == nil && os.SameFile(info, pi)
}

// equalPath compares two cleaned absolute paths; on the systems whose
// file systems usually ignore case, without case.
func equalPath(a, b string) bool {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// Kind names the type of a file that is not a regular file.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a regular file"
}

// OpenRegular opens path for reading if it is a regular file, and
// returns it with its FileInfo. Anything else is refused with
// ErrNotRegular, without blocking: the file is opened with O_NONBLOCK
// (a FIFO without a writer would block a plain open forever) and checked
// on the open descriptor.
func OpenRegular(path string) (*os.File, os.FileInfo, error) {
	if info, err := os.Stat(path); err == nil && !info.Mode().IsRegular() {
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%s: %w", Kind(info.Mode()), ErrNotRegular)}
	}
	f, err := openNonblock(path)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%s: %w", Kind(info.Mode()), ErrNotRegular)}
	}
	return f, info, nil
}

// tempInfix separates a target's base name from the random part of its
// temporary files' names.
const tempInfix = ".tmp-"

// CreateTemp creates a new temporary file for the target base in dir,
// named base.tmp-<16 hex digits>, with permission perm (before umask).
func CreateTemp(dir, base string, perm os.FileMode) (*os.File, error) {
	var b [8]byte
	for range 100 {
		_, _ = rand.Read(b[:])
		f, err := os.OpenFile(filepath.Join(dir, base+tempInfix+hex.EncodeToString(b[:])), os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, &fs.PathError{Op: "create temp", Path: filepath.Join(dir, base+tempInfix+"*"), Err: fs.ErrExist}
}

// IsTemp reports whether name (a base name) is the name of a temporary
// file of the target base: base.tmp- and 16 lowercase hexadecimal digits
// (CreateTemp), or 1 to 10 decimal digits (the names os.CreateTemp gives
// for the pattern base.tmp-*). Nothing else, whatever its prefix.
func IsTemp(name, base string) bool {
	rest, ok := strings.CutPrefix(name, base+tempInfix)
	if !ok {
		return false
	}
	hexRand := len(rest) == 16 && strings.Trim(rest, "0123456789abcdef") == ""
	decimal := len(rest) >= 1 && len(rest) <= 10 && strings.Trim(rest, "0123456789") == ""
	return hexRand || decimal
}
