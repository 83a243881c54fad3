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
	Image *syncfilter.Image
}

// Decode reads one snapshot from r and verifies it completely before
// returning it: magic, version, header checksum and fields, payload length,
// the BLAKE3 checksum, and the absence of trailing bytes, in that order.
// It returns a nil Snapshot exactly when it returns an error. It allocates
// no more than about twice the bytes r actually delivers: a short input
// claiming a huge filter is refused as truncated, not allocated.
func Decode(r io.Reader) (*Snapshot, error) {
	return decode(r, -1)
}

// decode is Decode with the input size when known (size >= 0), so that a
// file of the wrong length is refused before the payload is read.
func decode(r io.Reader, size int64) (*Snapshot, error) {
	s, err := decodeAll(r, size)
	if err != nil {
		return nil, fmt.Errorf("decode snapshot: %w", err)
	}
	return s, nil
}

func decodeAll(r io.Reader, size int64) (*Snapshot, error) {
	h, head, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	if size >= 0 {
		switch want := h.Size(); {
		case uint64(size) < want:
			return nil, fmt.Errorf("%d bytes, header announces %d: %w", size, want, ErrTruncated)
		case uint64(size) > want:
			return nil, fmt.Errorf("%d bytes, header announces %d: %w", size, want, ErrTrailingData)
		}
	}

	sum := blake3.New()
	_, _ = sum.Write(head[:])
	words, err := readPayload(r, h.PayloadLen(), sum, size >= 0)
	if err != nil {
		return nil, err
	}
	var want [checksumLen]byte
	if _, err := io.ReadFull(r, want[:]); err != nil {
		return nil, fmt.Errorf("checksum: %w", ErrTruncated)
	}
	if got := sum.Sum(nil); !bytes.Equal(got, want[:]) {
		return nil, ErrChecksum
	}
	var extra [1]byte
	if n, _ := io.ReadFull(r, extra[:]); n > 0 {
		return nil, ErrTrailingData
	}
	img, err := syncfilter.NewImage(h.Params, h.Items, words)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, ErrCorruptHeader) // unreachable: the header was validated
	}
	return &Snapshot{Header: h, Image: img}, nil
}

// readHeader reads and checks the header: magic, version, then the
// header's own checksum and fields. It reads nothing past the header.
func readHeader(r io.Reader) (Header, *[headerLenV1]byte, error) {
	var head [headerLenV1]byte
	if n, err := io.ReadFull(r, head[:prefixLen]); err != nil {
		if n < len(Magic) && !bytes.HasPrefix(Magic[:], head[:n]) {
			return Header{}, nil, ErrNotSnapshot
		}
		if n < len(Magic) || bytes.Equal(head[:len(Magic)], Magic[:]) {
			return Header{}, nil, fmt.Errorf("%d bytes: %w", n, ErrTruncated)
		}
	}
	if !bytes.Equal(head[:len(Magic)], Magic[:]) {
		return Header{}, nil, ErrNotSnapshot
	}
	if v := Version(binary.LittleEndian.Uint16(head[offVersion:])); v < MinVersion || v > MaxVersion {
		return Header{}, nil, fmt.Errorf("version %d, this program reads %d to %d: %w", v, MinVersion, MaxVersion, ErrUnsupportedVersion)
	}
	if _, err := io.ReadFull(r, head[prefixLen:]); err != nil {
		return Header{}, nil, fmt.Errorf("header: %w", ErrTruncated)
	}
	h, err := unmarshal(&head)
	if err != nil {
		return Header{}, nil, err
	}
	return h, &head, nil
}

// readPayload reads n bytes of little-endian words, feeding them to sum.
// Unless the length is already known to be there (sized), the word slice
// grows with the bytes read rather than with n.
func readPayload(r io.Reader, n uint64, sum io.Writer, sized bool) ([]uint64, error) {
	capWords := n / 8
	if !sized {
		capWords = min(capWords, chunkBytes/8)
	}
	words := make([]uint64, 0, capWords)
	buf := make([]byte, min(n, chunkBytes))
	for left := n; left > 0; {
		chunk := buf[:min(left, uint64(len(buf)))]
		if _, err := io.ReadFull(r, chunk); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("payload: %w", ErrTruncated)
			}
			return nil, fmt.Errorf("read payload: %w", err)
		}
		_, _ = sum.Write(chunk)
		if need := uint64(len(words)) + uint64(len(chunk))/8; need > uint64(cap(words)) {
			grown := make([]uint64, len(words), min(max(need, 2*uint64(cap(words))), n/8))
			copy(grown, words)
			words = grown
		}
		for i := 0; i < len(chunk); i += 8 {
			words = append(words, binary.LittleEndian.Uint64(chunk[i:]))
		}
		left -= uint64(len(chunk))
	}
	return words, nil
}
