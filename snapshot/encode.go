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

// Encode writes img as a snapshot of version h.Version (zero: MaxVersion).
// Params and Items are taken from img; an empty Policy or UnicodeVersion
// in h means this program's (normalize.Policy,
// normalize.UnicodeVersion()). Version 2 needs WithKey with the key of
// img's positions, the one the database holds; the file gets its KeyID.
// Version 1 writes that key into the header: it is for the released
// fixtures (cmd/fixturegen) and tests. Take img with Filter.Image so that
// no insert is half applied in it.
func Encode(w io.Writer, h Header, img *syncfilter.Image, opts ...Option) error {
	_, err := encode(w, h, img, collect(opts))
	return err
}

// encode is Encode, returning the checksum it wrote.
func encode(w io.Writer, h Header, img *syncfilter.Image, o options) (sum [checksumLen]byte, err error) {
	if img == nil {
		return sum, fmt.Errorf("encode snapshot: no image")
	}
	if h.Version == 0 {
		h.Version = MaxVersion
	}
	f, err := formatOf(h.Version)
	if err != nil {
		return sum, fmt.Errorf("encode snapshot: %w", err)
	}
	h.Params, h.Items = img.Params(), img.Items()
	switch {
	case o.key != nil && *o.key != h.Params.Key:
		return sum, fmt.Errorf("encode snapshot: the image's positions were placed with another key than the one given "+
			"(key id %x, given %x): build the filter with the database's key: %w", KeyID(h.Params.Key), KeyID(*o.key), ErrWrongKey)
	case o.key == nil && !f.keyInHeader:
		return sum, fmt.Errorf("encode snapshot: version %d is written with the key the database holds, and none was given (WithKey): %w", h.Version, ErrWrongKey)
	}
	h.KeyID = KeyID(h.Params.Key)
	if h.Policy == "" {
		h.Policy = h.Params.Compare.Policy()
	}
	if c, ok := syncfilter.CompareOf(h.Policy); ok && c != h.Params.Compare {
		return sum, fmt.Errorf("encode snapshot: policy %q for a filter that compares %v: %w", h.Policy, h.Params.Compare, syncfilter.ErrInvalidParams)
	}
	if h.UnicodeVersion == "" {
		h.UnicodeVersion = normalize.UnicodeVersion()
	}
	head, err := marshalHeader(&h)
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
