package snapshot

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/zeebo/blake3"

	"github.com/syncfilter/syncfilter/syncfilter"
)

// Version is a snapshot format version. Every version starts with the same
// 8-byte magic followed by the version as a little-endian uint16; what
// follows depends on the version. A reader accepts exactly the versions
// from MinVersion to MaxVersion and refuses any other with
// ErrUnsupportedVersion: it never guesses the layout of a version it does
// not know.
type Version uint16

const (
	// Version1 is the first format: a fixed 192-byte header with its own
	// checksum, the bit array, and a BLAKE3-256 checksum of both. The
	// header holds the key of the positions: whoever copies the file can
	// test ids against its bits. Read forever; written only in memory
	// (Encode), for the released fixtures. See docs/FORMAT.md.
	Version1 Version = 1

	// Version2 is Version1 without the key: header bytes [32, 48) hold
	// the key id (KeyID), [48, 64) are zero. The key is kept by the
	// database and given to readers and writers with WithKey.
	Version2 Version = 2

	MinVersion = Version1 // oldest version this package reads
	MaxVersion = Version2 // newest version this package reads, and the one WriteFile writes
)

// format is what this package knows of one version: the length of its
// header and what bytes [32, 64) hold. Reading and writing dispatch on the
// version through formats, so a new version is an entry here, not a fork
// of the codec (pebble's sstable TableFormat is the model). Everything
// after the header (payload of m/8 bytes, 32-byte BLAKE3-256 checksum over
// header and payload) is the same in every version so far.
type format struct {
	headerLen   int
	keyInHeader bool // bytes [32, 64): the key (version 1), or the key id and zeros
}

// formats maps every version from MinVersion to MaxVersion to its format.
var formats = map[Version]format{
	Version1: {headerLen: headerLen, keyInHeader: true},
	Version2: {headerLen: headerLen},
}

// formatOf returns the format of v, or ErrUnsupportedVersion.
func formatOf(v Version) (format, error) {
	f, ok := formats[v]
	if !ok || v < MinVersion || v > MaxVersion {
		return format{}, fmt.Errorf("version %d, this program reads %d to %d: %w", v, MinVersion, MaxVersion, ErrUnsupportedVersion)
	}
	return f, nil
}

// Magic starts every snapshot. The high first byte and the CR LF, ^Z, LF
// tail (after PNG) catch text-mode transfers and truncation to 7 bits.
var Magic = [8]byte{0x89, 'S', 'F', 'B', '\r', '\n', 0x1a, '\n'}

// Offsets of the header, the same in versions 1 and 2 but for bytes
// [32, 64); all integers little-endian.
const (
	offMagic       = 0   // [8]byte Magic
	offVersion     = 8   // uint16 format version
	offHeaderLen   = 10  // uint16 header length, 192
	offLayout      = 12  // uint8 syncfilter.Layout
	offHash        = 13  // uint8 syncfilter.Hash
	offFlags       = 14  // uint16, zero
	offM           = 16  // uint64 bits
	offK           = 24  // uint32 positions per key
	offReserved1   = 28  // uint32, zero
	offHashKey     = 32  // version 1: [32]byte BLAKE3 key of the positions
	offKeyID       = 32  // version 2: [16]byte KeyID of that key, then [16]byte zero
	offItems       = 64  // uint64 keys inserted, repeats included
	offCapacity    = 72  // uint64 keys the filter was sized for, 0 if unknown
	offGeneration  = 80  // uint64 source generation the filter covers
	offDatasetID   = 88  // [16]byte identity of the source dataset
	offCreated     = 104 // int64 Unix nanoseconds
	offPayloadLen  = 112 // uint64 payload bytes, m/8
	offPolicy      = 120 // [16]byte normalization policy, ASCII, NUL-padded
	offUnicode     = 136 // [16]byte Unicode version, ASCII, NUL-padded
	offReserved2   = 152 // [32]byte, zero
	offHeaderSum   = 184 // [8]byte first 8 bytes of BLAKE3-256 of bytes [0, 184)
	headerLen      = 192
	keyIDLen       = 16
	checksumLen    = 32 // BLAKE3-256 of header and payload, after the payload
	prefixLen      = 12 // magic, version, header length: the same in every version
	maxNameLen     = 16
	minSnapshotLen = headerLen + 64 + checksumLen // one 512-bit block
)

// Header is everything a snapshot says about its filter besides the bits.
type Header struct {
	Version Version
	// Params are the filter's parameters. Params.Key is the key of the
	// positions: read from a version 1 header; for version 2, the key
	// given with WithKey once KeyID matched it, zero when none was given.
	Params         syncfilter.Params
	KeyID          [16]byte  // KeyID(Params.Key): stored in version 2, computed in version 1
	Items          uint64    // keys inserted, repeats included
	Capacity       uint64    // keys the filter was sized for (0: unknown)
	Generation     uint64    // the source state the filter covers (package rebuild)
	DatasetID      [16]byte  // the source the filter was built from (package rebuild)
	Created        time.Time // when the snapshot was taken
	Policy         string    // normalization policy, e.g. "nfc/1"
	UnicodeVersion string    // Unicode version of the normalization tables
}

// PayloadLen is the number of payload bytes: m/8.
func (h *Header) PayloadLen() uint64 { return h.Params.M / 8 }

// Size is the total encoded length: header, payload and checksum. A zero
// Version means MaxVersion.
func (h *Header) Size() uint64 {
	v := h.Version
	if v == 0 {
		v = MaxVersion
	}
	f, err := formatOf(v)
	if err != nil {
		return 0
	}
	return uint64(f.headerLen) + h.PayloadLen() + checksumLen
}

// marshalHeader writes the header of version h.Version (known), header
// checksum included. A version 2 header stores h.KeyID in place of the key.
func marshalHeader(h *Header) ([]byte, error) {
	b := make([]byte, headerLen)
	f, err := formatOf(h.Version)
	if err != nil {
		return b, fmt.Errorf("encode header: %w", err)
	}
	if err := h.Params.Validate(); err != nil {
		return b, fmt.Errorf("encode header: %w", err)
	}
	if len(h.Policy) > maxNameLen || len(h.UnicodeVersion) > maxNameLen {
		return b, fmt.Errorf("encode header: policy %q or Unicode version %q longer than %d bytes", h.Policy, h.UnicodeVersion, maxNameLen)
	}
	le := binary.LittleEndian
	copy(b[offMagic:], Magic[:])
	le.PutUint16(b[offVersion:], uint16(h.Version))
	le.PutUint16(b[offHeaderLen:], uint16(f.headerLen))
	b[offLayout] = byte(h.Params.Layout)
	b[offHash] = byte(h.Params.Hash)
	le.PutUint64(b[offM:], h.Params.M)
	le.PutUint32(b[offK:], h.Params.K)
	if f.keyInHeader {
		copy(b[offHashKey:], h.Params.Key[:])
	} else {
		copy(b[offKeyID:], h.KeyID[:])
	}
	le.PutUint64(b[offItems:], h.Items)
	le.PutUint64(b[offCapacity:], h.Capacity)
	le.PutUint64(b[offGeneration:], h.Generation)
	copy(b[offDatasetID:], h.DatasetID[:])
	le.PutUint64(b[offCreated:], uint64(h.Created.UnixNano()))
	le.PutUint64(b[offPayloadLen:], h.PayloadLen())
	copy(b[offPolicy:offPolicy+maxNameLen], h.Policy)
	copy(b[offUnicode:offUnicode+maxNameLen], h.UnicodeVersion)
	sum := blake3.Sum256(b[:offHeaderSum])
	copy(b[offHeaderSum:], sum[:8])
	return b, nil
}

// unmarshalHeader parses a header of version v, format f (len(b) ==
// f.headerLen), whose magic and version were checked, in a fixed order:
// header length, header checksum, then each field.
func unmarshalHeader(b []byte, v Version, f format) (Header, error) {
	le := binary.LittleEndian
	if n := le.Uint16(b[offHeaderLen:]); int(n) != f.headerLen {
		return Header{}, fmt.Errorf("header length %d, version %d has %d: %w", n, v, f.headerLen, ErrCorruptHeader)
	}
	sum := blake3.Sum256(b[:offHeaderSum])
	if !bytes.Equal(sum[:8], b[offHeaderSum:f.headerLen]) {
		return Header{}, fmt.Errorf("header checksum: %w", ErrCorruptHeader)
	}
	h := Header{
		Version: v,
		Params: syncfilter.Params{
			Layout: syncfilter.Layout(b[offLayout]),
			Hash:   syncfilter.Hash(b[offHash]),
			M:      le.Uint64(b[offM:]),
			K:      le.Uint32(b[offK:]),
		},
		Items:      le.Uint64(b[offItems:]),
		Capacity:   le.Uint64(b[offCapacity:]),
		Generation: le.Uint64(b[offGeneration:]),
		Created:    time.Unix(0, int64(le.Uint64(b[offCreated:]))).UTC(),
	}
	var reservedKeyBytes []byte // version 2: the bytes after the key id
	if f.keyInHeader {
		copy(h.Params.Key[:], b[offHashKey:])
		h.KeyID = KeyID(h.Params.Key)
	} else {
		copy(h.KeyID[:], b[offKeyID:])
		reservedKeyBytes = b[offKeyID+keyIDLen : offItems]
	}
	copy(h.DatasetID[:], b[offDatasetID:])
	if err := h.Params.Validate(); err != nil {
		return Header{}, fmt.Errorf("%v: %w", err, ErrCorruptHeader)
	}
	if n := le.Uint64(b[offPayloadLen:]); n != h.PayloadLen() {
		return Header{}, fmt.Errorf("payload length %d for m = %d: %w", n, h.Params.M, ErrCorruptHeader)
	}
	if le.Uint16(b[offFlags:]) != 0 || le.Uint32(b[offReserved1:]) != 0 || !allZero(reservedKeyBytes) || !allZero(b[offReserved2:offHeaderSum]) {
		return Header{}, fmt.Errorf("reserved bytes set: %w", ErrCorruptHeader)
	}
	var err error
	if h.Policy, err = name(b[offPolicy : offPolicy+maxNameLen]); err != nil {
		return Header{}, fmt.Errorf("policy: %w", err)
	}
	if h.UnicodeVersion, err = name(b[offUnicode : offUnicode+maxNameLen]); err != nil {
		return Header{}, fmt.Errorf("unicode version: %w", err)
	}
	if c, ok := syncfilter.CompareOf(h.Policy); ok {
		h.Params.Compare = c // a policy this program does not know is refused by CheckPolicy
	}
	return h, nil
}

// name decodes a NUL-padded printable ASCII field.
func name(b []byte) (string, error) {
	n := bytes.IndexByte(b, 0)
	if n < 0 {
		n = len(b)
	}
	if n == 0 || !allZero(b[n:]) {
		return "", ErrCorruptHeader
	}
	for _, c := range b[:n] {
		if c < 0x21 || c > 0x7e {
			return "", ErrCorruptHeader
		}
	}
	return string(b[:n]), nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
