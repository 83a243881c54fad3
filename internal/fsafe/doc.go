// Package fsafe is the one rule for every file that package snapshot,
// package rebuild and the syncfilter command write, replace or delete
// (snapshots, their temporary files, the metrics file), and for every file
// they read by path.
//
// # Writing
//
// CheckWrite says which file a write to a path replaces, or refuses:
//
//   - never one of the protected files, typically the database and its
//     -wal, -shm and -journal files (DatabaseFiles): compared after
//     resolving symbolic links (SQLite names its files after the resolved
//     path) and, for files that exist, by device and inode, so that no
//     spelling (a symbolic link, "..", a hard link) gets through
//     (ErrProtected);
//   - never a file that is not a regular file: a directory, a FIFO, a
//     device, a socket (ErrNotRegular);
//   - a symbolic link is followed: the file it points to is the one
//     replaced, by a rename in that file's own directory, and the link
//     itself stays as it is.
//
// Whether an existing regular file is the caller's own kind (a snapshot
// of this dataset, this command's metrics) is the caller's question:
// Target.Info says what is there.
//
// # Temporary files
//
// CreateTemp names a temporary file exactly: the target's base name,
// ".tmp-" and 16 random hexadecimal digits. SweepTemp removes leftovers
// of crashed writers, and only files that are provably one: named by
// that exact pattern (or the decimal one os.CreateTemp gives, never a
// mere prefix), regular, not modified for a while, and starting with
// the writer's magic bytes or empty. An app's "records.sfb.tmp-notes"
// is never touched.
//
// # Reading
//
// OpenRegular opens a file for reading only if it is a regular file,
// without blocking: a FIFO at the path is refused at once (opened with
// O_NONBLOCK, then checked on the open descriptor, so nothing can be
// swapped in between a check and the open).
package fsafe
