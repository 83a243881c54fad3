// Package snapshot stores a filter on disk and reads it back only if it
// checks out.
//
// # Basics
//
// A snapshot is a filter's parameters and bits with two BLAKE3 checksums,
// the identity of the data it covers (dataset id and generation) and the
// normalization it was built under. The byte layout is specified in
// docs/FORMAT.md and summarized next to the code (format.go).
//
//	img, _ := f.Image(ctx)                                 // consistent copy
//	err := snapshot.WriteFile(path, h, img, snapshot.WithKey(key)) // atomic replace
//	s, err := snapshot.ReadFile(path, snapshot.WithKey(key))       // verified or refused
//	f, err := syncfilter.Thaw(s.Image)
//
// # Keys
//
// Whoever holds the key of a filter's positions (syncfilter.Params.Key)
// can test a guessed id against its bits. Version 2, the version written,
// keeps the key out of the file: the database holds it (encrypted with
// the database, where it is), and every read that wants the bits and
// every write is given it (WithKey). The header stores the key's KeyID
// instead, so that another key is refused from the header alone
// (ErrWrongKey), before the payload is read. Verifying a file's integrity
// needs no key (Verify, VerifyFile), nor does reading its claim
// (ReadClaim, ReadHeader; CheckKey then checks it). Version 1 files hold
// their key in the header and are read as before; given a key, they must
// hold that one. Which versions a database still accepts is the caller's
// rule, on Header.Version.
//
// # Strictness
//
// Decode checks, in this order: magic, version, header checksum and fields,
// the key, length, payload checksum, trailing bytes; each failure has its
// own sentinel (ErrNotSnapshot, ErrUnsupportedVersion, ErrCorruptHeader,
// ErrWrongKey, ErrTruncated, ErrChecksum, ErrTrailingData). It never
// panics and never allocates much more than the input really holds.
// CheckPolicy (or CheckNormalization, with the policy the header's
// Params.Compare names, which this program must implement) and
// CheckDataset then say whether an intact snapshot may be used here
// (ErrIncompatible). A refused snapshot is rebuilt from the source of
// truth; its parameters are never guessed. Only bytes that were read and
// are wrong get these sentinels: a read error of the file (EIO, say) is
// returned wrapped as it came, and a path that is not a regular file is
// ErrNotRegular.
//
// Decoding dispatches on the version through a table of formats
// (format.go): a new version is an entry, not a fork of the decoder.
//
// # Large files and untrusted claims
//
// Verify and VerifyFile check a snapshot to its last byte while streaming
// it (header, checksum, and the filter's health computed on the way) in
// constant memory, whatever m the header claims. ReadClaim reads only the
// header and the stored checksum, so that a loader can compare them with
// what it trusts (package rebuild asks the database) before it reads and
// allocates the payload. WithCommit lets such a loader record the
// checksum before the file is renamed into place.
//
// # Files
//
// Every file this package reads, writes or sweeps follows one rule
// (package internal/fsafe): a path read must be a regular file, checked
// on the open descriptor and opened without blocking (a FIFO is refused
// with ErrNotRegular at once); a save never replaces a file that is not
// a regular file, nor any file the caller protects (WithProtected: the
// database and its -wal, -shm, -journal, under any spelling); a symbolic link at the path is followed, the file it names
// replaced in its own directory and the link kept; temporary files have
// an exact name with a random part and are swept only when stale and
// holding a snapshot's magic (or nothing), never by prefix.
//
// # Caveats
//
// WriteFile makes the replacement atomic, not the content fresh: a
// snapshot covers the source as of its generation, and package rebuild
// catches up on everything committed later.
package snapshot
