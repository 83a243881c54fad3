package snapshot

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/syncfilter/syncfilter/internal/fsafe"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// FileMode is the permission of snapshot files. A version 2 file holds no
// key, but its counts (items, generation, creation time) tell how much the
// database holds and when it changed; a version 1 file holds the key.
const FileMode = 0o600

// StaleTemp is how long a temporary file must have gone unmodified before
// WriteFile treats it as left behind by a crashed writer and removes it.
// A live writer touches its temporary file with every chunk it writes.
const StaleTemp = 5 * time.Minute

// testHookChunkWritten, when set by tests, runs after each chunk written
// to a temporary file, so a test can kill a writer in the middle.
var testHookChunkWritten func()

// SweepTemp removes the temporary files that writers of path killed
// outright left beside the file path resolves to, under WriteFile's rule
// (so named, stale, holding a snapshot's magic or nothing), and returns
// their names. WriteFile sweeps them too; a reader that may never write
// again calls this. A path WriteFile would refuse sweeps nothing.
func SweepTemp(path string) []string {
	t, err := fsafe.CheckWrite(path)
	if err != nil {
		return nil
	}
	return sweepTemp(t)
}

func sweepTemp(t fsafe.Target) []string {
	return fsafe.SweepTemp(t.Dir, filepath.Base(t.File), time.Now().Add(-StaleTemp), Magic[:])
}

// WriteFile writes a snapshot to path atomically: it writes a temporary
// file in the same directory, syncs it, renames it over path and syncs the
// directory. It writes version h.Version (zero: MaxVersion), 2 or later:
// give the database's key with WithKey (see Encode). WithMode,
// WithCommit and WithProtected set the file's permission, a step before
// the rename and the files path must never be. A crash at any moment leaves either the previous file or the
// new one at path, never a mix; the temporary file is removed on error,
// and ones left by crashed writers are swept (see StaleTemp).
//
// The files it replaces, creates and sweeps follow one rule (package
// internal/fsafe): path must be a regular file or not exist (a
// directory, a FIFO or a device is refused with ErrNotRegular); a
// symbolic link at path is followed, the file it points to is replaced
// in its own directory and the link stays; temporary files are named
// "<name>.tmp-<16 hex digits>" and swept only when so named, stale, and
// holding a snapshot's magic or nothing, never by prefix. The new file
// gets the owner and group of the file it replaces where the process may
// (as root; a group of its own otherwise).
func WriteFile(path string, h Header, img *syncfilter.Image, opts ...Option) error {
	if h.Version == 0 {
		h.Version = MaxVersion
	}
	if f, ok := formats[h.Version]; ok && f.keyInHeader {
		return fmt.Errorf("write snapshot: version %d puts the key of the positions in the file: WriteFile writes version 2 or later", h.Version)
	}
	return writeFile(path, h, img, collect(opts))
}

func writeFile(path string, h Header, img *syncfilter.Image, o options) (err error) {
	mode, protected := o.mode, o.protected
	if mode == 0 {
		mode = FileMode
	}
	t, err := fsafe.CheckWrite(path, protected...)
	if err != nil {
		return fmt.Errorf("check snapshot path: %w", err)
	}
	base := filepath.Base(t.File)
	sweepTemp(t)
	tmp, err := fsafe.CreateTemp(t.Dir, base, 0o600)
	if err != nil {
		return fmt.Errorf("create temp file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(mode.Perm()); err != nil && runtime.GOOS != "windows" {
		return fmt.Errorf("chmod temp file: %w", err)
	}
	if t.Info != nil {
		fsafe.CopyOwner(tmp, t.Info)
	}
	var w io.Writer = tmp
	if testHookChunkWritten != nil {
		w = hookWriter{tmp}
	}
	sum, err := encode(w, h, img, o) // encode buffers by chunkBytes
	if err != nil {
		return fmt.Errorf("write temp file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync temp file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close temp file: %w", err)
	}
	// The path may have changed while the filter was written (a link
	// moved, a directory or FIFO put there): check it again.
	if again, err := fsafe.CheckWrite(path, protected...); err != nil || again.File != t.File {
		if err == nil {
			err = fmt.Errorf("%s now resolves to %s, not %s", path, again.File, t.File)
		}
		return fmt.Errorf("check snapshot path: %w", err)
	}
	if o.commit != nil {
		if err := o.commit(sum); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp.Name(), t.File); err != nil {
		return fmt.Errorf("rename temp file: %w", err)
	}
	if err := fsafe.SyncDir(t.Dir); err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}

type hookWriter struct{ f *os.File }

func (w hookWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	testHookChunkWritten()
	return n, err
}

// ReadFile reads and verifies the snapshot at path (see Decode; a version
// 2 snapshot needs WithKey). The file's size and the key are checked
// against its header before the payload is read.
func ReadFile(path string, opts ...Option) (*Snapshot, error) {
	f, size, err := openSized(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := decode(bufio.NewReaderSize(f, chunkBytes), size, collect(opts))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return s, nil
}

// ReadHeader reads and checks only the header of the snapshot at path
// (magic, version, header checksum and fields; the key if WithKey is
// given): what the file claims, not yet verified against its payload. It
// reads at most a few hundred bytes.
func ReadHeader(path string, opts ...Option) (Header, error) {
	f, _, err := fsafe.OpenRegular(path)
	if err != nil {
		return Header{}, fmt.Errorf("open snapshot: %w", err)
	}
	defer f.Close()
	h, _, err := readHeader(f)
	if err == nil {
		o := collect(opts)
		err = o.readKey(&h, false)
	}
	if err != nil {
		return Header{}, fmt.Errorf("read header of %s: %w", path, err)
	}
	return h, nil
}

// VerifyFile checks the snapshot at path completely, streaming: constant
// memory whatever its header claims (see Verify). The file's size is
// checked against its header before the payload is read. A version 2
// snapshot is verified without its key (given one, VerifyFile checks it).
func VerifyFile(path string, opts ...Option) (Header, syncfilter.Stats, [32]byte, error) {
	f, size, err := openSized(path)
	if err != nil {
		return Header{}, syncfilter.Stats{}, [32]byte{}, err
	}
	defer f.Close()
	h, st, sum, err := verify(bufio.NewReaderSize(f, chunkBytes), size, collect(opts))
	if err != nil {
		return Header{}, syncfilter.Stats{}, sum, fmt.Errorf("%s: %w", path, err)
	}
	return h, st, sum, nil
}

// Claim is what a snapshot file says about itself before its payload is
// read: its checked header and the checksum stored at its end (not yet
// verified against the payload).
type Claim struct {
	Header
	Checksum [32]byte
}

// ReadClaim reads the header and the stored checksum of the snapshot at
// path, and checks that the file's length is the one the header
// announces; it reads no payload. A loader compares the claim with what
// it trusts (the database's record of the snapshots it saved, the size
// the source needs, its key: WithKey or Header.CheckKey, and the lowest
// version it accepts) before it reads and allocates the payload.
func ReadClaim(path string, opts ...Option) (Claim, error) {
	f, size, err := openSized(path)
	if err != nil {
		return Claim{}, err
	}
	defer f.Close()
	h, _, err := readHeader(f)
	if err == nil {
		o := collect(opts)
		err = o.readKey(&h, false)
	}
	if err != nil {
		return Claim{}, fmt.Errorf("read %s: %w", path, err)
	}
	switch want := h.Size(); {
	case uint64(size) < want:
		return Claim{}, fmt.Errorf("read %s: %d bytes, header announces %d: %w", path, size, want, ErrTruncated)
	case uint64(size) > want:
		return Claim{}, fmt.Errorf("read %s: %d bytes, header announces %d: %w", path, size, want, ErrTrailingData)
	}
	c := Claim{Header: h}
	if _, err := f.ReadAt(c.Checksum[:], size-checksumLen); err != nil {
		return Claim{}, fmt.Errorf("read %s: %w", path, readError("checksum", err))
	}
	return c, nil
}

// openSized opens a regular file and returns its size. A directory, a
// FIFO or another kind of file is refused by name (ErrNotRegular), not
// read as a short snapshot, and without blocking (fsafe.OpenRegular).
func openSized(path string) (*os.File, int64, error) {
	f, info, err := fsafe.OpenRegular(path)
	if err != nil {
		return nil, 0, fmt.Errorf("open snapshot: %w", err)
	}
	return f, info.Size(), nil
}
