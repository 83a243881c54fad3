package upkeep

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/syncfilter/syncfilter/internal/fsafe"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/snapshot"
)

// checkTarget refuses a snapshot path that must not be replaced, by the
// one file rule (package internal/fsafe): the database or one of its
// files under any spelling (symbolic links, "..", hard links; SQLite
// names its -wal after the resolved path), a directory, a FIFO or
// another file that is not a regular file; and, unless force is set, an
// existing file that is not a snapshot or is the snapshot of a dataset
// other than ds (known false: the source has no dataset yet, so any
// existing snapshot is another's). A symbolic link at target is judged
// by the file it names: that file is the one a save replaces. The
// refusals say what the file is and what to do.
func checkTarget(target, database string, ds [16]byte, known, force bool) error {
	refuse := func(why string) error {
		return fmt.Errorf("check snapshot path %s: %s: %w", target, why, store.ErrUnsafeTarget)
	}
	protected := fsafe.DatabaseFiles(database)
	t, err := fsafe.CheckWrite(target, protected...)
	switch {
	case errors.Is(err, fsafe.ErrProtected):
		for _, p := range protected {
			if _, err := fsafe.CheckWrite(target, p); errors.Is(err, fsafe.ErrProtected) {
				return refuse("it is the database's own file " + filepath.Base(p) + " (" + p + ")")
			}
		}
		return refuse("it is one of the database's own files")
	case errors.Is(err, fsafe.ErrNotRegular):
		return refuse("it is " + fsafe.Kind(t.Info.Mode()) + ", not a regular file")
	case err != nil:
		return fmt.Errorf("check snapshot path %s: %w", target, err)
	case t.Info == nil, force:
		return nil
	}
	named := ""
	if t.Link {
		named = " (the file the link names, " + t.File + ")"
	}
	h, err := snapshot.ReadHeader(t.File)
	switch {
	case errors.Is(err, snapshot.ErrNotSnapshot), errors.Is(err, snapshot.ErrTruncated) && t.Info.Size() < int64(len(snapshot.Magic)):
		return refuse("the existing file" + named + " is not a snapshot (set ReplaceForeignFile, or pass --force to syncfilter rebuild, to replace it anyway)")
	case err != nil:
		// A snapshot by its magic, but damaged or of a version this
		// program does not read: the library's own kind of file, whose
		// dataset cannot be told. Replacing it loses nothing usable.
		return nil
	case !known:
		return refuse(fmt.Sprintf("the existing file%s is the snapshot of dataset %x (written %s, generation %d), "+
			"and this database has no record of the source: it was never attached here, or the database was deleted and created again since. "+
			"If the database was recreated, the file is stale: delete it, or set ReplaceForeignFile (syncfilter rebuild --force) to replace it; "+
			"if it belongs to another database, choose another snapshot path",
			named, h.DatasetID, h.Created.UTC().Format(time.RFC3339), h.Generation))
	case h.DatasetID != ds:
		return refuse(fmt.Sprintf("the existing file%s is the snapshot of another dataset, %x (written %s, generation %d), "+
			"and this database's source is dataset %x: the file belongs to another database, or to this one before it was "+
			"deleted and created again (or detached and attached again). Delete it, or set ReplaceForeignFile (syncfilter rebuild --force) "+
			"to replace it; if another database uses it, choose another snapshot path",
			named, h.DatasetID, h.Created.UTC().Format(time.RFC3339), h.Generation, ds))
	}
	return nil
}

// checkTargetDir makes sure a snapshot can be created beside the file
// the target names (a symbolic link's target: that is where a save
// writes): the directory exists, is a directory, and a file can be
// created in it (a probe, named as the rule names temporary files, is
// created and removed), so that a job whose only product is the file
// fails before it scans, not after.
func CheckTargetDir(target string) error {
	file, err := fsafe.Resolve(target)
	if err != nil {
		return fmt.Errorf("check snapshot path %s: %w", target, err)
	}
	dir := filepath.Dir(file)
	d, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("check snapshot path %s: %w", target, err)
	}
	if !d.IsDir() {
		return fmt.Errorf("check snapshot path %s: %s is not a directory: %w", target, dir, store.ErrUnsafeTarget)
	}
	probe, err := fsafe.CreateTemp(dir, filepath.Base(file), 0o600)
	if err != nil {
		return fmt.Errorf("check snapshot path %s: cannot create files in %s: %w", target, dir, err)
	}
	_ = probe.Close()
	_ = os.Remove(probe.Name())
	return nil
}
