package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/zeebo/blake3"

	"github.com/syncfilter/syncfilter/syncfilter"
)

// Snapshot is a decoded, verified snapshot: its header and its bits.
type Snapshot struct {
	Header
	Image    *syncfilter.Image
	Checksum [32]byte // the BLAKE3-256 of header and payload stored at the end, verified
}

// Decode reads one snapshot from r and verifies it completely before
// returning it: magic, version, header checksum and fields, the key,
// payload length, the BLAKE3 checksum, and the absence of trailing bytes,
// in that order. A version 2 snapshot needs WithKey (see there). It
// returns a nil Snapshot exactly when it returns an error. It allocates
// no more than about twice the bytes r actually delivers: a short input
// claiming a huge filter is refused as truncated, not allocated.
func Decode(r io.Reader, opts ...Option) (*Snapshot, error) {
	return decode(r, -1, collect(opts))
}

// decode is Decode with the input size when known (size >= 0), so that a
// file of the wrong length is refused before the payload is read.
func decode(r io.Reader, size int64, o options) (*Snapshot, error) {
	s, err := decodeAll(r, size, o)
	if err != nil {
		return nil, fmt.Errorf("decode snapshot: %w", err)
	}
	return s, nil
}

func decodeAll(r io.Reader, size int64, o options) (*Snapshot, error) {
	var words []uint64
	h, sum, err := stream(r, size, o, true, func(h *Header, chunk []byte) {
		if words == nil {
			// Unless the length is known to be there (sized), grow with the
			// bytes read rather than with what the header claims.
			capWords := h.PayloadLen() / 8
			if size < 0 {
				capWords = min(capWords, chunkBytes/8)
			}
			words = make([]uint64, 0, capWords)
		}
		if need := uint64(len(words)) + uint64(len(chunk))/8; need > uint64(cap(words)) {
			grown := make([]uint64, len(words), min(max(need, 2*uint64(cap(words))), h.PayloadLen()/8))
			copy(grown, words)
			words = grown
		}
		for i := 0; i < len(chunk); i += 8 {
			words = append(words, binary.LittleEndian.Uint64(chunk[i:]))
		}
	})
	if err != nil {
		return nil, err
	}
	img, err := syncfilter.NewImage(h.Params, h.Items, words)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, ErrCorruptHeader) // unreachable: the header was validated
	}
	return &Snapshot{Header: h, Image: img, Checksum: sum}, nil
}

// stream reads one snapshot from r in order: the header (checked), the
// key (o.readKey; need: the caller wants the bits), the payload in chunks
// of at most chunkBytes handed to each, the checksum (compared), and
// nothing after it. With size >= 0, a length that does not match the
// header is refused before the payload is read. It returns the header and
// the file's checksum.
//
// Only bytes that were read and are wrong are corruption: an input that
// ends early is ErrTruncated, and any other read error is returned
// wrapped, as it came (errors.Is finds it).
func stream(r io.Reader, size int64, o options, need bool, each func(h *Header, chunk []byte)) (Header, [checksumLen]byte, error) {
	var want [checksumLen]byte
	h, head, err := readHeader(r)
	if err != nil {
		return Header{}, want, err
	}
	if err := o.readKey(&h, need); err != nil {
		return Header{}, want, err
	}
	if size >= 0 {
		switch w := h.Size(); {
		case uint64(size) < w:
			return Header{}, want, fmt.Errorf("%d bytes, header announces %d: %w", size, w, ErrTruncated)
		case uint64(size) > w:
			return Header{}, want, fmt.Errorf("%d bytes, header announces %d: %w", size, w, ErrTrailingData)
		}
	}
	sum := blake3.New()
	_, _ = sum.Write(head)
	buf := make([]byte, min(h.PayloadLen(), chunkBytes))
	for left := h.PayloadLen(); left > 0; {
		chunk := buf[:min(left, uint64(len(buf)))]
		if _, err := io.ReadFull(r, chunk); err != nil {
			return Header{}, want, readError("payload", err)
		}
		_, _ = sum.Write(chunk)
		each(&h, chunk)
		left -= uint64(len(chunk))
	}
	if _, err := io.ReadFull(r, want[:]); err != nil {
		return Header{}, want, readError("checksum", err)
	}
	var extra [1]byte
	if got := sum.Sum(nil); !bytes.Equal(got, want[:]) {
		// The length decides before the checksum, however the bytes are
		// read: a longer input is trailing data, as it is when its size
		// is known in advance.
		if n, _ := io.ReadFull(r, extra[:]); n > 0 {
			return Header{}, want, ErrTrailingData
		}
		return Header{}, want, ErrChecksum
	}
	switch n, err := io.ReadFull(r, extra[:]); {
	case n > 0:
		return Header{}, want, ErrTrailingData
	case err != nil && !errors.Is(err, io.EOF):
		return Header{}, want, fmt.Errorf("read after checksum: %w", err)
	}
	return h, want, nil
}

// readError names an early end of input ErrTruncated and passes any other
// read error through.
func readError(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%s: %w", what, ErrTruncated)
	}
	return fmt.Errorf("read %s: %w", what, err)
}

// readHeader reads and checks the header: magic, version, then (through
// the version's format) the header's own checksum and fields. It reads
// nothing past the header.
func readHeader(r io.Reader) (Header, []byte, error) {
	var prefix [prefixLen]byte
	if n, err := io.ReadFull(r, prefix[:]); err != nil {
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return Header{}, nil, fmt.Errorf("read header: %w", err)
		}
		if n < len(Magic) && !bytes.HasPrefix(Magic[:], prefix[:n]) {
			return Header{}, nil, ErrNotSnapshot
		}
		if n >= len(Magic) && !bytes.Equal(prefix[:len(Magic)], Magic[:]) {
			return Header{}, nil, ErrNotSnapshot
		}
		if n >= offVersion+2 { // the version is there: judge it first
			if _, err := formatOf(Version(binary.LittleEndian.Uint16(prefix[offVersion:]))); err != nil {
				return Header{}, nil, err
			}
		}
		return Header{}, nil, fmt.Errorf("%d bytes: %w", n, ErrTruncated)
	}
	if !bytes.Equal(prefix[:len(Magic)], Magic[:]) {
		return Header{}, nil, ErrNotSnapshot
	}
	v := Version(binary.LittleEndian.Uint16(prefix[offVersion:]))
	f, err := formatOf(v)
	if err != nil {
		return Header{}, nil, err
	}
	head := make([]byte, f.headerLen)
	copy(head, prefix[:])
	if _, err := io.ReadFull(r, head[prefixLen:]); err != nil {
		return Header{}, nil, readError("header", err)
	}
	h, err := unmarshalHeader(head, v, f)
	if err != nil {
		return Header{}, nil, err
	}
	return h, head, nil
}

// Verify reads one snapshot from r and checks it completely, as Decode
// does, without keeping its bits: memory stays constant whatever m the
// header claims. It returns the header, the filter's health computed on
// the way, and the file's BLAKE3-256 checksum. Neither the checksum nor
// the health depends on the key: a version 2 snapshot is verified without
// one (given one, Verify checks it too).
func Verify(r io.Reader, opts ...Option) (Header, syncfilter.Stats, [32]byte, error) {
	return verify(r, -1, collect(opts))
}

func verify(r io.Reader, size int64, o options) (Header, syncfilter.Stats, [32]byte, error) {
	var meter *syncfilter.HealthMeter
	var words []uint64
	h, sum, err := stream(r, size, o, false, func(h *Header, chunk []byte) {
		if meter == nil {
			meter = syncfilter.NewHealthMeter(h.Params)
			words = make([]uint64, chunkBytes/8)
		}
		n := len(chunk) / 8
		for i := range n {
			words[i] = binary.LittleEndian.Uint64(chunk[8*i:])
		}
		meter.Write(words[:n]...)
	})
	if err != nil {
		return Header{}, syncfilter.Stats{}, sum, fmt.Errorf("verify snapshot: %w", err)
	}
	if meter == nil {
		meter = syncfilter.NewHealthMeter(h.Params)
	}
	return h, meter.Stats(h.Items), sum, nil
}
