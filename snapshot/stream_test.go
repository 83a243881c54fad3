package snapshot

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sparseSnapshot writes a file whose valid header claims m bits, with
// the payload a hole and a zero checksum: its size matches the claim, its
// bytes are mostly never written.
func sparseSnapshot(t testing.TB, m uint64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sparse.sfb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(forgeHeader(t, Version2, m)); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(headerLen + m/8 + checksumLen)); err != nil {
		t.Fatal(err)
	}
	return path
}

// peakHeap samples the heap while fn runs and returns the largest growth
// over the heap before it.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	for {
		select {
		case <-done:
			runtime.ReadMemStats(&ms)
			return max(peak, ms.HeapAlloc) - base
		case <-time.After(2 * time.Millisecond):
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}
}

// TestVerifyStreamsInConstantMemory: a sparse file whose header claims
// 2^34 bits (2 GiB) is checked to its end, and refused, without holding
// its bits; its claim is read without reading the payload at all.
func TestVerifyStreamsInConstantMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("hashes 2 GiB")
	}
	m := uint64(1 << 34)
	if raceEnabled {
		m = 1 << 31 // 256 MiB: still four times the bound below
	}
	path := sparseSnapshot(t, m)
	var err error
	var grew uint64 = peakHeap(func() { _, _, _, err = VerifyFile(path) })
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("VerifyFile = %v, want ErrChecksum", err)
	}
	if grew > 64<<20 {
		t.Fatalf("VerifyFile of a %d-bit claim grew the heap by %d MiB", m, grew>>20)
	}
	var c Claim
	grew = peakHeap(func() { c, err = ReadClaim(path) })
	if err != nil || c.Params.M != m || c.Checksum != [32]byte{} {
		t.Fatalf("ReadClaim = %+v, %v", c.Header, err)
	}
	if grew > 1<<20 {
		t.Fatalf("ReadClaim grew the heap by %d bytes", grew)
	}
}

// TestVerifyAgreesWithDecode: on a valid file, Verify returns the header,
// health and checksum that decoding does; without the key, the same but
// for the key itself, which a version 2 file does not hold.
func TestVerifyAgreesWithDecode(t *testing.T) {
	data := encodeTestSnapshot(t)
	s, err := Decode(bytes.NewReader(data), WithKey(testKey))
	if err != nil {
		t.Fatal(err)
	}
	keyless := s.Header
	keyless.Params.Key = [32]byte{}
	for _, tc := range []struct {
		opts []Option
		want Header
	}{{[]Option{WithKey(testKey)}, s.Header}, {nil, keyless}} {
		h, st, sum, err := Verify(bytes.NewReader(data), tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if h != tc.want || sum != s.Checksum || st != s.Image.Stats() {
			t.Fatalf("Verify %+v %+v %x\nDecode %+v %+v %x", h, st, sum, tc.want, s.Image.Stats(), s.Checksum)
		}
	}
	if !bytes.Equal(s.Checksum[:], data[len(data)-checksumLen:]) {
		t.Fatal("checksum is not the file's last 32 bytes")
	}
	path := filepath.Join(t.TempDir(), "s.sfb")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := ReadClaim(path)
	if err != nil || c.Header != keyless || c.Checksum != s.Checksum {
		t.Fatalf("ReadClaim = %+v, %v", c, err)
	}
	if c, err := ReadClaim(path, WithKey(testKey)); err != nil || c.Header != s.Header {
		t.Fatalf("ReadClaim with the key = %+v, %v", c, err)
	}
	for _, cut := range []int{len(data) - 1, headerLen + 3} {
		_ = os.WriteFile(path, data[:cut], 0o600)
		if _, err := ReadClaim(path); !errors.Is(err, ErrTruncated) {
			t.Fatalf("ReadClaim of %d bytes = %v", cut, err)
		}
	}
	_ = os.WriteFile(path, append(data, 0), 0o600)
	if _, err := ReadClaim(path); !errors.Is(err, ErrTrailingData) {
		t.Fatalf("ReadClaim with a trailing byte = %v", err)
	}
}

// failingReader delivers n bytes of data, then fails with err.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestReadErrorsAreNotCorruption: a reader failing with EIO anywhere in
// the file gives an error that is EIO, not a verdict on the bytes; an early
// end is still ErrTruncated.
func TestReadErrorsAreNotCorruption(t *testing.T) {
	data := encodeTestSnapshot(t)
	verdicts := []error{ErrNotSnapshot, ErrUnsupportedVersion, ErrTruncated, ErrCorruptHeader, ErrWrongKey, ErrChecksum, ErrTrailingData}
	for _, at := range []int{0, 5, prefixLen, headerLen - 1, headerLen + 10, len(data) - 5, len(data)} {
		for name, dec := range map[string]func(io.Reader) error{
			"Decode": func(r io.Reader) error { _, err := Decode(r, WithKey(testKey)); return err },
			"Verify": func(r io.Reader) error { _, _, _, err := Verify(r); return err },
		} {
			err := dec(&failingReader{data: data[:at], err: syscall.EIO})
			if !errors.Is(err, syscall.EIO) {
				t.Fatalf("%s, EIO after %d bytes: %v, want EIO", name, at, err)
			}
			for _, v := range verdicts {
				if errors.Is(err, v) {
					t.Fatalf("%s, EIO after %d bytes: %v is also %v", name, at, err, v)
				}
			}
			if at < len(data) {
				if err := dec(&failingReader{data: data[:at], err: io.EOF}); !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrNotSnapshot) {
					t.Fatalf("%s, EOF after %d bytes: %v", name, at, err)
				}
			}
		}
	}
}

// encodeTestSnapshot returns the encoding of a filter of 5,000 keys.
func encodeTestSnapshot(t testing.TB) []byte {
	t.Helper()
	_, data := build(t, testParams(t, 5000), keys("stream", 5000))
	return data
}

// kindOf names the sentinel of err, or "ok".
func kindOf(err error) string {
	for _, k := range []struct {
		name string
		err  error
	}{{"not_a_snapshot", ErrNotSnapshot}, {"unsupported_version", ErrUnsupportedVersion}, {"truncated", ErrTruncated},
		{"corrupt_header", ErrCorruptHeader}, {"wrong_key", ErrWrongKey}, {"checksum_mismatch", ErrChecksum}, {"trailing_data", ErrTrailingData}} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return "ok"
}

// TestErrorKindDoesNotDependOnHowBytesAreRead: for every truncation,
// insertion, append and many bit flips of a real snapshot of each
// version, decoding a stream of unknown size and reading the same bytes as
// a file (size known first) name the same kind.
func TestErrorKindDoesNotDependOnHowBytesAreRead(t *testing.T) {
	for _, v := range versions {
		_, data := buildVersion(t, testParams(t, 5000), keys("stream", 5000), v)
		testErrorKinds(t, data)
	}
}

func testErrorKinds(t *testing.T, data []byte) {
	path := filepath.Join(t.TempDir(), "s.sfb")
	var variants [][]byte
	for n := 0; n <= len(data); n += max(1, len(data)/300) {
		variants = append(variants, data[:n])
	}
	for _, at := range []int{0, 5, 12, 100, 191, 192, 300, len(data) - 40, len(data) - 32, len(data) - 1, len(data)} {
		for _, ins := range [][]byte{{0}, make([]byte, 8), make([]byte, 32), make([]byte, 64)} {
			v := append(append(append([]byte(nil), data[:at]...), ins...), data[at:]...)
			variants = append(variants, v)
		}
	}
	for i := 0; i < len(data)*8; i += 7 {
		if payload := i/8 >= headerLen && i/8 < len(data)-checksumLen; payload && testing.Short() && i%(7*67) != 0 {
			continue // -short (make cross, emulated): one payload flip in 67; all end at the checksum
		}
		v := bytes.Clone(data)
		v[i/8] ^= 1 << (i % 8)
		variants = append(variants, v)
	}
	for _, v := range variants {
		_, streamErr := Decode(bytes.NewReader(v), WithKey(testKey))
		_, _, _, verifyErr := Verify(bytes.NewReader(v), WithKey(testKey))
		if err := os.WriteFile(path, v, 0o600); err != nil {
			t.Fatal(err)
		}
		_, fileErr := ReadFile(path, WithKey(testKey))
		_, _, _, vfErr := VerifyFile(path, WithKey(testKey))
		kinds := []string{kindOf(streamErr), kindOf(verifyErr), kindOf(fileErr), kindOf(vfErr)}
		if kinds[0] != kinds[1] || kinds[0] != kinds[2] || kinds[0] != kinds[3] {
			t.Fatalf("%d bytes: stream %s, verify %s, file %s, verify file %s", len(v), kinds[0], kinds[1], kinds[2], kinds[3])
		}
		if len(v) > len(data) && kinds[0] != "trailing_data" && !strings.HasPrefix(kinds[0], "corrupt") && kinds[0] != "not_a_snapshot" && kinds[0] != "unsupported_version" {
			t.Fatalf("%d bytes, longer than the snapshot: %s", len(v), kinds[0])
		}
	}
}

// TestShortInputsFollowTheDecisionTable: the first steps of FORMAT.md's
// table, for inputs shorter than a header.
func TestShortInputsFollowTheDecisionTable(t *testing.T) {
	v3 := append(Magic[:], 3, 0)
	v2 := append(Magic[:], 2, 0)
	v1 := append(Magic[:], 1, 0)
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{nil, "truncated"},
		{Magic[:5], "truncated"},
		{[]byte("hello"), "not_a_snapshot"},
		{[]byte("hello, world"), "not_a_snapshot"},
		{Magic[:], "truncated"},
		{v3, "unsupported_version"},
		{append(v3, 0xc0), "unsupported_version"},
		{append(Magic[:], 0, 0), "unsupported_version"},
		{v1, "truncated"},
		{append(v1, 192, 0, 1), "truncated"},
		{v2, "truncated"},
		{append(v2, 192, 0, 1), "truncated"},
	} {
		_, err := Decode(bytes.NewReader(tc.in))
		if got := kindOf(err); got != tc.want {
			t.Errorf("% x: %s, want %s", tc.in, got, tc.want)
		}
	}
}
