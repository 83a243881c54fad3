package rebuild

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/syncfilter/syncfilter/snapshot"
)

// databaseFiles are the suffixes of the files SQLite keeps beside a
// database: the database itself, its write-ahead log, its shared-memory
// index and its rollback journal.
var databaseFiles = []string{"", "-wal", "-shm", "-journal"}

// checkTarget refuses a snapshot path that must not be replaced: the
// database or one of its files (by any path: symbolic links, "..", hard
// links), a directory, and, unless force is set, an existing file that is
// not a snapshot or is the snapshot of a dataset other than ds (known
// false: the source has no dataset yet, so any existing snapshot is
// another's).
func checkTarget(target, database string, ds [16]byte, known, force bool) error {
	refuse := func(why string) error {
		return fmt.Errorf("check snapshot path %s: %s: %w", target, why, ErrUnsafeTarget)
	}
	for _, suffix := range databaseFiles {
		if samePath(target, database+suffix) {
			return refuse("it is the database's own file " + filepath.Base(database+suffix))
		}
	}
	info, err := os.Stat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("check snapshot path %s: %w", target, err)
	case info.IsDir():
		return refuse("it is a directory")
	case !info.Mode().IsRegular():
		return refuse("it is not a regular file")
	case force:
		return nil
	}
	h, err := snapshot.ReadHeader(target)
	switch {
	case errors.Is(err, snapshot.ErrNotSnapshot), errors.Is(err, snapshot.ErrTruncated) && info.Size() < int64(len(snapshot.Magic)):
		return refuse("the existing file is not a snapshot (set ReplaceForeignFile, or --force, to replace it anyway)")
	case err != nil:
		// A snapshot by its magic, but damaged or of a version this
		// program does not read: the library's own kind of file, whose
		// dataset cannot be told. Replacing it loses nothing usable.
		return nil
	case !known || h.DatasetID != ds:
		return refuse(fmt.Sprintf("the existing file is the snapshot of another dataset (%x) (set ReplaceForeignFile, or --force, to replace it anyway)", h.DatasetID))
	}
	return nil
}

// samePath reports whether a and b name the same file: the same inode if
// both exist, else the same cleaned absolute path once the directory's
// symbolic links are resolved (for the -wal or -shm file not created yet).
func samePath(a, b string) bool {
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(ia, ib)
	}
	return resolved(a) == resolved(b)
}

func resolved(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	dir, base := filepath.Split(abs)
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	return filepath.Join(dir, base)
}

// checkTargetDir makes sure a snapshot can be created in the target's
// directory (it exists, is a directory, and a file can be created in it:
// a probe file is created and removed), so that a job whose only product
// is the file fails before it scans, not after.
func checkTargetDir(target string) error {
	dir := filepath.Dir(target)
	d, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("check snapshot path %s: %w", target, err)
	}
	if !d.IsDir() {
		return fmt.Errorf("check snapshot path %s: %s is not a directory: %w", target, dir, ErrUnsafeTarget)
	}
	probe, err := os.CreateTemp(dir, filepath.Base(target)+".probe-*")
	if err != nil {
		return fmt.Errorf("check snapshot path %s: cannot create files in %s: %w", target, dir, err)
	}
	_ = probe.Close()
	_ = os.Remove(probe.Name())
	return nil
}
