package snapshot

import "os"

// An Option adjusts how a snapshot is read or written. WithKey applies to
// both; WithMode, WithCommit and WithProtected to WriteFile only (readers
// ignore them).
type Option func(*options)

type options struct {
	key       *[32]byte
	mode      os.FileMode
	commit    func(sum [32]byte) error
	protected []string
}

func collect(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithKey gives the key of the positions, as the database holds it.
//
// Reading: a version 2 snapshot is decoded only with it (its header holds
// the key id, never the key); a version 1 snapshot must hold it in its
// header. Either way another key is ErrWrongKey, found from the header
// alone, before the payload is read. Verify, VerifyFile, ReadClaim and
// ReadHeader need no key: given one, they check it too.
//
// Writing: version 2 is written only with it, and it must be the key the
// image's positions were placed with (ErrWrongKey otherwise): a filter
// built or loaded with another key is rebuilt with the database's, never
// saved under it.
func WithKey(key [32]byte) Option {
	return func(o *options) { o.key = &key }
}

// WithMode sets the permission of the file WriteFile creates (default
// FileMode).
func WithMode(mode os.FileMode) Option {
	return func(o *options) { o.mode = mode }
}

// WithCommit gives WriteFile a last step before the rename: commit
// receives the checksum of the complete, synced temporary file, and an
// error from it removes the file and leaves the path as it was. A loader
// that trusts only snapshots it has a record of (package rebuild records
// them in the database) records the checksum there: a crash after the
// record and before the rename leaves a record of a file that never
// appeared, which vouches for nothing.
func WithCommit(commit func(sum [32]byte) error) Option {
	return func(o *options) { o.commit = commit }
}

// WithProtected names files that WriteFile's path must never be, under
// any spelling (symbolic links, "..", hard links): package rebuild passes
// the database and its -wal, -shm and -journal files. Such a path is
// refused before anything is written, and checked again just before the
// rename.
func WithProtected(paths ...string) Option {
	return func(o *options) { o.protected = append(o.protected, paths...) }
}
