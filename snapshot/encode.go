package snapshot

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/zeebo/blake3"

	"github.com/syncfilter/syncfilter/normalize"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// chunkBytes is the unit of payload I/O: big enough for throughput, small
// enough that a reader never allocates far ahead of the bytes it has seen.
const chunkBytes = 1 << 20

// Encode writes img as a version 1 snapshot. Params and Items are taken
// from img; an empty Policy or UnicodeVersion in h means this program's
// (normalize.Policy, normalize.UnicodeVersion()). Take img with
// Filter.Image so that no insert is half applied in it.
func Encode(w io.Writer, h Header, img *syncfilter.Image) error {
	_, err := encode(w, h, img)
	return err
}

// encode is Encode, returning the checksum it wrote.
func encode(w io.Writer, h Header, img *syncfilter.Image) (sum [checksumLen]byte, err error) {
	if img == nil {
		return sum, fmt.Errorf("encode snapshot: no image")
	}
	h.Params, h.Items = img.Params(), img.Items()
	if h.Policy == "" {
		h.Policy = normalize.Policy
	}
	if h.UnicodeVersion == "" {
		h.UnicodeVersion = normalize.UnicodeVersion()
	}
	f, err := formatOf(MaxVersion)
	if err != nil {
		return sum, fmt.Errorf("encode snapshot: %w", err)
	}
	head, err := f.marshal(&h)
	if err != nil {
		return sum, fmt.Errorf("encode snapshot: %w", err)
	}
	hash := blake3.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, hash), chunkBytes)
	_, _ = bw.Write(head) // errors resurface at Flush
	var buf [8]byte
	for _, word := range img.Words() {
		binary.LittleEndian.PutUint64(buf[:], word)
		_, _ = bw.Write(buf[:])
	}
	if err := bw.Flush(); err != nil {
		return sum, fmt.Errorf("encode snapshot: %w", err)
	}
	copy(sum[:], hash.Sum(nil))
	if _, err := w.Write(sum[:]); err != nil {
		return sum, fmt.Errorf("encode snapshot: %w", err)
	}
	return sum, nil
}
