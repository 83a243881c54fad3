package snapshot

import (
	"errors"

	"github.com/syncfilter/syncfilter/internal/fsafe"
)

// Errors returned when reading a snapshot, in the order the decoder checks
// for them. Each is wrapped with context; test with errors.Is. A read
// error of the underlying file (EIO, say) is none of these: it is
// returned wrapped as it came, and says nothing about the file's bytes. A snapshot
// refused with any of them must not be used: rebuild from the source of
// truth instead (never guess the parameters of a damaged file).
var (
	// ErrNotSnapshot: the input does not start with the snapshot magic.
	ErrNotSnapshot = errors.New("not a snapshot")

	// ErrUnsupportedVersion: the format version is not one this program
	// reads (see MinVersion and MaxVersion).
	ErrUnsupportedVersion = errors.New("unsupported snapshot version")

	// ErrTruncated: the input ends before the header, payload or checksum
	// it announces.
	ErrTruncated = errors.New("truncated snapshot")

	// ErrCorruptHeader: the header fails its own checksum or holds values
	// that no valid writer produces (unknown layout, m out of range, m and
	// payload length disagreeing, non-zero reserved bytes).
	ErrCorruptHeader = errors.New("corrupt snapshot header")

	// ErrWrongKey: the key given (WithKey) is not the one the snapshot's
	// positions were placed with (a version 1 header holds another key; a
	// version 2 key id does not match), or a version 2 snapshot was to
	// be decoded or written without a key. Found from the header alone,
	// before the payload is read; the file may be intact, and belong to
	// another key (a version 1 file from before the database took its
	// key, say).
	ErrWrongKey = errors.New("wrong snapshot key")

	// ErrChecksum: the BLAKE3 checksum over header and payload does not
	// match.
	ErrChecksum = errors.New("snapshot checksum mismatch")

	// ErrTrailingData: bytes follow the checksum.
	ErrTrailingData = errors.New("trailing data after snapshot")

	// ErrNotRegular: the path names a directory, a FIFO, a device or
	// another file that is not a regular file; snapshots are regular
	// files, read with their size known. Not a verdict on any bytes.
	// Refused without blocking: a FIFO is never opened for a blocking
	// read. (The same value as the file rule's own, fsafe.ErrNotRegular.)
	ErrNotRegular = fsafe.ErrNotRegular

	// ErrIncompatible: the snapshot is intact but must not be used here:
	// it was built under another normalization policy or Unicode version,
	// or from another dataset (see Header.CheckNormalization and
	// Header.CheckDataset).
	ErrIncompatible = errors.New("incompatible snapshot")
)
