package main

import (
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"

	"github.com/syncfilter/syncfilter/internal/fsafe"
	"github.com/syncfilter/syncfilter/internal/sqlitecode"
)

// checkDB refuses a --db path that exists but is not a regular file:
// SQLite would wait forever opening a FIFO for reading. A missing file is
// left to the library, which says so in its own words.
func checkDB(path string) error {
	info, err := os.Stat(path)
	if err != nil || info.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("open database %s: it is %s: %w", path, fsafe.Kind(info.Mode()), fsafe.ErrNotRegular)
}

// walMode reports whether the database file's header says WAL (bytes 18
// and 19, the file format's write and read versions, are 2): read without
// SQLite, which is what failed.
func walMode(path string) bool {
	f, _, err := fsafe.OpenRegular(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var h [20]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return false
	}
	return string(h[:16]) == "SQLite format 3\x00" && h[18] == 2 && h[19] == 2
}

// explainReadOnly turns the usual failures of a read-only command run by
// a user who may read the database but not write its directory into what
// happened and what to do. Other errors are returned as they are.
func explainReadOnly(db string, err error) error {
	if p := sqlitecode.Primary(err); p != sqlitecode.ReadOnly && p != sqlitecode.CantOpen {
		return err
	}
	file, rerr := fsafe.Resolve(db)
	if rerr != nil {
		return err
	}
	dir := filepath.Dir(file)
	who := "this user"
	if u, uerr := user.Current(); uerr == nil {
		who = "user " + u.Username
	}
	if sqlitecode.Is(err, sqlitecode.ReadOnlyRollback) {
		return fmt.Errorf("cannot read %s as %s: a hot journal (%s-journal) is left from a write that never finished, and only a user who may write the database can roll it back: "+
			"open the database once as the app's user (the app does this by itself), then run this command again: %w", db, who, file, err)
	}
	if canWrite(dir) || !walMode(file) {
		return err
	}
	shm := file + "-shm"
	var state string
	switch _, serr := os.Stat(shm); {
	case serr != nil:
		state = "does not exist (no process has the database open)"
	case !canRead(shm):
		state = "exists but " + who + " may not read it"
	default:
		state = "exists but needs rebuilding, which only a writer may do"
	}
	return fmt.Errorf("cannot read %s as %s: the database is in WAL mode, and reading it needs its -shm file %s, which %s, and %s may not create files in %s. "+
		"Run this command as a user who may write %s (the app's user), or while the app holds the database open, "+
		"or have the app use a rollback journal (PRAGMA journal_mode = DELETE), which needs no write access to read: %w",
		db, who, shm, state, who, dir, dir, err)
}
