package snapshot

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zeebo/blake3"

	"github.com/syncfilter/syncfilter/syncfilter"
)

var created = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

// testKey is the key of every test filter (testParams): in package
// rebuild, the one the database holds.
var testKey = func() (k [32]byte) {
	for i := range k {
		k[i] = byte(100 + i)
	}
	return k
}()

// keyed is WithKey(testKey) as decode's options.
var keyed = collect([]Option{WithKey(testKey)})

// versions are the versions this package writes, each test's cases run
// on both.
var versions = []Version{Version1, Version2}

func testParams(t testing.TB, n uint64) syncfilter.Params {
	t.Helper()
	p, err := syncfilter.NewParams(n, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	p.Key = testKey
	return p
}

func keys(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%06d", prefix, i)
	}
	return out
}

// build returns an image holding ks, and its encoding as version 2.
func build(t testing.TB, p syncfilter.Params, ks []string) (*syncfilter.Image, []byte) {
	t.Helper()
	return buildVersion(t, p, ks, Version2)
}

// buildVersion is build writing version v.
func buildVersion(t testing.TB, p syncfilter.Params, ks []string, v Version) (*syncfilter.Image, []byte) {
	t.Helper()
	f, err := syncfilter.New(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.AddBatch(context.Background(), ks); err != nil {
		t.Fatal(err)
	}
	img, err := f.Image(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	h := Header{Version: v, Capacity: 1000, Generation: 42, DatasetID: [16]byte{1, 2, 3}, Created: created}
	if err := Encode(&buf, h, img, WithKey(p.Key)); err != nil {
		t.Fatal(err)
	}
	return img, buf.Bytes()
}

func TestRoundTripAnswersLikeTheFilter(t *testing.T) {
	for _, v := range versions {
		t.Run(fmt.Sprint("version ", v), func(t *testing.T) { testRoundTrip(t, v) })
	}
}

func testRoundTrip(t *testing.T, v Version) {
	p := testParams(t, 5000)
	in := keys("in", 5000)
	img, enc := buildVersion(t, p, in, v)
	if got, want := uint64(len(enc)), (&Header{Version: v, Params: p}).Size(); got != want {
		t.Fatalf("encoded %d bytes, Size() says %d", got, want)
	}
	s, err := Decode(bytes.NewReader(enc), WithKey(testKey))
	if err != nil {
		t.Fatal(err)
	}
	h := s.Header
	if h.Params != p || h.KeyID != KeyID(p.Key) || h.Items != 5000 || h.Capacity != 1000 || h.Generation != 42 ||
		h.DatasetID != [16]byte{1, 2, 3} || !h.Created.Equal(created) || h.Version != v {
		t.Fatalf("header round trip: %+v", h)
	}
	if err := h.CheckNormalization(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Image.Words(), img.Words()) {
		t.Fatal("decoded bits differ")
	}
	probe := append(keys("in", 5000), keys("out", 20000)...)
	want, _ := img.MightContainBatch(nil, probe)
	got, _ := s.Image.MightContainBatch(nil, probe)
	if !slices.Equal(got, want) {
		t.Fatal("decoded filter answers differently")
	}
	for i := range in {
		if !got[i] {
			t.Fatalf("decoded filter lost %q", in[i])
		}
	}
}

func TestReinsertingKeepsBytesIdentical(t *testing.T) {
	p := testParams(t, 1000)
	ks := keys("k", 1000)
	_, first := build(t, p, ks)
	_, again := build(t, p, append(slices.Clone(ks), ks...))
	// Items counts repeats; everything else, bits and checksum included,
	// must be the same once the count is equal.
	s, err := Decode(bytes.NewReader(again), WithKey(testKey))
	if err != nil {
		t.Fatal(err)
	}
	img, err := syncfilter.NewImage(s.Image.Params(), 1000, slices.Clone(s.Image.Words()))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Encode(&buf, s.Header, img, WithKey(testKey)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), first) {
		t.Fatalf("inserting the same keys twice changed the bits")
	}
	_, second := build(t, p, slices.Clone(ks))
	if !bytes.Equal(first, second) {
		t.Fatalf("same keys, same hash key, same time: snapshots differ at byte %d", firstDiff(first, second))
	}
}

func TestAllOnesPayloadAnswersMaybeForEverything(t *testing.T) {
	p := testParams(t, 1000)
	words := make([]uint64, p.M/64)
	for i := range words {
		words[i] = ^uint64(0)
	}
	img, err := syncfilter.NewImage(p, 0, words)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Encode(&buf, Header{Created: created}, img, WithKey(testKey)); err != nil {
		t.Fatal(err)
	}
	s, err := Decode(&buf, WithKey(testKey))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Image.MightContainBatch(nil, keys("any", 10000))
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range got {
		if !ok {
			t.Fatalf("all-ones filter answered absent for key %d", i)
		}
	}
	if st := s.Image.Stats(); st.FillRatio != 1 || st.EstimatedFPR != 1 {
		t.Fatalf("all-ones stats: %+v", st)
	}
}

// smallSnapshot is one block with a few keys, as version v: small enough
// to flip every bit.
func smallSnapshot(t testing.TB, v Version) []byte {
	p := testParams(t, 1)
	p.M, p.K = 512, 7
	_, enc := buildVersion(t, p, []string{"a", "b", "c"}, v)
	return enc
}

func TestEverySingleBitFlipIsRefused(t *testing.T) {
	for _, v := range versions {
		enc := smallSnapshot(t, v)
		for bit := 0; bit < 8*len(enc); bit++ {
			bad := slices.Clone(enc)
			bad[bit/8] ^= 1 << (bit % 8)
			want := expectedFlipError(bit / 8)
			s, err := Decode(bytes.NewReader(bad), WithKey(testKey))
			if s != nil || !errors.Is(err, want) {
				t.Fatalf("version %d, bit %d (byte %d) flipped: %v, want %v", v, bit, bit/8, err, want)
			}
			s, err = decode(bytes.NewReader(bad), int64(len(bad)), keyed)
			if s != nil || err == nil {
				t.Fatalf("version %d, bit %d flipped, sized decode accepted it", v, bit)
			}
		}
	}
}

// expectedFlipError is the sentinel a flip of byte i must produce.
func expectedFlipError(i int) error {
	switch {
	case i < offVersion:
		return ErrNotSnapshot
	case i < offHeaderLen:
		return ErrUnsupportedVersion
	case i < headerLen:
		return ErrCorruptHeader
	}
	return ErrChecksum
}

func TestEveryTruncationIsRefused(t *testing.T) {
	for _, v := range versions {
		enc := smallSnapshot(t, v)
		for n := 0; n < len(enc); n++ {
			s, err := Decode(bytes.NewReader(enc[:n]), WithKey(testKey))
			if s != nil || !errors.Is(err, ErrTruncated) {
				t.Fatalf("version %d, first %d of %d bytes: %v, want ErrTruncated", v, n, len(enc), err)
			}
			s, err = decode(bytes.NewReader(enc[:n]), int64(n), keyed)
			if s != nil || !errors.Is(err, ErrTruncated) {
				t.Fatalf("version %d, first %d of %d bytes, sized: %v, want ErrTruncated", v, n, len(enc), err)
			}
		}
		for _, extra := range [][]byte{{0}, []byte("more"), enc} {
			bad := append(slices.Clone(enc), extra...)
			if s, err := Decode(bytes.NewReader(bad), WithKey(testKey)); s != nil || !errors.Is(err, ErrTrailingData) {
				t.Fatalf("version %d, %d bytes appended: %v, want ErrTrailingData", v, len(extra), err)
			}
			if s, err := decode(bytes.NewReader(bad), int64(len(bad)), keyed); s != nil || !errors.Is(err, ErrTrailingData) {
				t.Fatalf("version %d, %d bytes appended, sized: %v, want ErrTrailingData", v, len(extra), err)
			}
		}
	}
}

func TestNotASnapshot(t *testing.T) {
	for _, in := range []string{"x", "hello world, not a filter", "\x89SFC\r\n\x1a\n\x01\x00", "PK\x03\x04 zip file"} {
		if s, err := Decode(bytes.NewReader([]byte(in))); s != nil || !errors.Is(err, ErrNotSnapshot) {
			t.Fatalf("%q: %v, want ErrNotSnapshot", in, err)
		}
	}
}

// forgeHeader returns a header of version v, key testKey, with a correct
// header checksum, whose m field says m (valid or not).
func forgeHeader(t testing.TB, v Version, m uint64) []byte {
	p := testParams(t, 1)
	h := Header{Version: v, Params: p, KeyID: KeyID(p.Key), Created: created, Policy: "nfc/1", UnicodeVersion: "15.0.0"}
	b, err := marshalHeader(&h)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint64(b[offM:], m)
	binary.LittleEndian.PutUint64(b[offPayloadLen:], m/8)
	sum := blake3.Sum256(b[:offHeaderSum])
	copy(b[offHeaderSum:], sum[:8])
	return b[:]
}

// TestHugeClaimsAllocateNothing: a header claiming an enormous filter,
// followed by almost nothing, is refused without allocating for the claim.
func TestHugeClaimsAllocateNothing(t *testing.T) {
	type claim struct {
		name string
		in   []byte
		want error
	}
	var claims []claim
	for _, v := range versions {
		claims = append(claims,
			claim{fmt.Sprintf("v%d: 40 bytes claiming m = 2^60", v), forgeHeader(t, v, 1<<60)[:40], ErrTruncated},
			claim{fmt.Sprintf("v%d: full header claiming m = 2^60", v), forgeHeader(t, v, 1<<60), ErrCorruptHeader},
			claim{fmt.Sprintf("v%d: valid header claiming 8 GiB, no payload", v), forgeHeader(t, v, syncfilter.MaxBits), ErrTruncated},
			claim{fmt.Sprintf("v%d: valid header claiming 8 GiB, 100 payload bytes", v), append(forgeHeader(t, v, syncfilter.MaxBits), make([]byte, 100)...), ErrTruncated})
	}
	for _, tc := range claims {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			s, err := Decode(bytes.NewReader(tc.in), WithKey(testKey))
			runtime.ReadMemStats(&after)
			if s != nil || !errors.Is(err, tc.want) {
				t.Fatalf("%v, want %v", err, tc.want)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
				t.Fatalf("allocated %d bytes for a %d-byte input", grew, len(tc.in))
			}
		})
	}
}

func TestHeaderFieldsAreChecked(t *testing.T) {
	for _, v := range versions {
		t.Run(fmt.Sprint("version ", v), func(t *testing.T) { testHeaderFields(t, v) })
	}
}

func testHeaderFields(t *testing.T, v Version) {
	enc := smallSnapshot(t, v)
	reseal := func(b []byte) []byte {
		sum := blake3.Sum256(b[:offHeaderSum])
		copy(b[offHeaderSum:], sum[:8])
		return b
	}
	type mutation struct {
		name   string
		mutate func(b []byte)
		want   error
	}
	cases := []mutation{
		{"future version", func(b []byte) { b[offVersion] = byte(MaxVersion) + 1 }, ErrUnsupportedVersion},
		{"version zero", func(b []byte) { b[offVersion] = 0 }, ErrUnsupportedVersion},
		{"header length", func(b []byte) { b[offHeaderLen] = 200; reseal(b) }, ErrCorruptHeader},
		{"unknown layout", func(b []byte) { b[offLayout] = 7; reseal(b) }, ErrCorruptHeader},
		{"unknown hash", func(b []byte) { b[offHash] = 9; reseal(b) }, ErrCorruptHeader},
		{"flags", func(b []byte) { b[offFlags] = 1; reseal(b) }, ErrCorruptHeader},
		{"k zero", func(b []byte) { binary.LittleEndian.PutUint32(b[offK:], 0); reseal(b) }, ErrCorruptHeader},
		{"k 22", func(b []byte) { binary.LittleEndian.PutUint32(b[offK:], 22); reseal(b) }, ErrCorruptHeader},
		{"m not whole blocks", func(b []byte) { binary.LittleEndian.PutUint64(b[offM:], 520); reseal(b) }, ErrCorruptHeader},
		{"payload length disagrees", func(b []byte) { binary.LittleEndian.PutUint64(b[offPayloadLen:], 128); reseal(b) }, ErrCorruptHeader},
		{"reserved", func(b []byte) { b[offReserved2+5] = 1; reseal(b) }, ErrCorruptHeader},
		{"empty policy", func(b []byte) { clear(b[offPolicy : offPolicy+16]); reseal(b) }, ErrCorruptHeader},
		{"policy with junk after padding", func(b []byte) { b[offPolicy+15] = 'x'; reseal(b) }, ErrCorruptHeader},
		{"unprintable unicode version", func(b []byte) { b[offUnicode] = '\n'; reseal(b) }, ErrCorruptHeader},
		{"generation changed without resealing", func(b []byte) { b[offGeneration]++ }, ErrCorruptHeader},
		{"generation changed and resealed", func(b []byte) { b[offGeneration]++; reseal(b) }, ErrChecksum},
		// The key step comes after the header's checks and before the
		// payload: another key, resealed, is a wrong key, not damage.
		{"key field changed and resealed", func(b []byte) { b[offHashKey+3] ^= 1; reseal(b) }, ErrWrongKey},
		{"key field changed and resealed, payload and checksum zeroed", func(b []byte) { b[offHashKey+3] ^= 1; reseal(b); clear(b[headerLen:]) }, ErrWrongKey},
	}
	if v == Version2 {
		cases = append(cases, mutation{"bytes after the key id", func(b []byte) { b[offKeyID+keyIDLen+7] = 1; reseal(b) }, ErrCorruptHeader})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bad := slices.Clone(enc)
			tc.mutate(bad)
			if s, err := Decode(bytes.NewReader(bad), WithKey(testKey)); s != nil || !errors.Is(err, tc.want) {
				t.Fatalf("%v, want %v", err, tc.want)
			}
		})
	}
}

func TestCompatibilityChecks(t *testing.T) {
	s, err := Decode(bytes.NewReader(smallSnapshot(t, MaxVersion)), WithKey(testKey))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckNormalization(); err != nil {
		t.Fatalf("own snapshot: %v", err)
	}
	if err := s.CheckDataset([16]byte{1, 2, 3}); err != nil {
		t.Fatalf("own dataset: %v", err)
	}
	if err := s.CheckDataset([16]byte{9}); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("other dataset: %v", err)
	}
	h := s.Header
	h.UnicodeVersion = "99.0.0"
	if err := h.CheckNormalization(); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("other Unicode version: %v", err)
	}
	h = s.Header
	h.Policy = "nfkc-casefold/1"
	if err := h.CheckNormalization(); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("other policy: %v", err)
	}
	// A policy is a name to the format: the reader says which it expects.
	h = s.Header
	if err := h.CheckPolicy("nfc/1", "15.0.0"); err != nil {
		t.Fatalf("CheckPolicy with the file's own: %v", err)
	}
	if err := h.CheckPolicy("bytes/1", "15.0.0"); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("CheckPolicy with another policy: %v", err)
	}
}

func TestWriteFileIsAtomicAndPrivate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "filter.sfb")
	p := testParams(t, 1000)
	ctx := context.Background()
	f, err := syncfilter.New(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for round := 0; round < 3; round++ {
		if err := f.AddBatch(ctx, keys(fmt.Sprint("r", round), 100)); err != nil {
			t.Fatal(err)
		}
		img, err := f.Image(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(path, Header{Generation: uint64(round)}, img, WithKey(testKey)); err != nil {
			t.Fatal(err)
		}
		s, err := ReadFile(path, WithKey(testKey))
		if err != nil {
			t.Fatal(err)
		}
		if s.Generation != uint64(round) || s.Items != uint64(100*(round+1)) {
			t.Fatalf("round %d: read back generation %d items %d", round, s.Generation, s.Items)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm() != FileMode {
		t.Fatalf("mode %v, want %v", st.Mode().Perm(), os.FileMode(FileMode))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only the snapshot", len(entries))
	}
}

// TestWriteFileOptions: WithCommit sees the checksum of the complete file
// before it replaces the old one, and its error leaves the old one;
// WithMode sets the permission.
func TestWriteFileOptions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "filter.sfb")
	img, _ := build(t, testParams(t, 100), keys("k", 10))
	var recorded [32]byte
	record := func(sum [32]byte) error {
		if _, err := os.Stat(path); err == nil {
			t.Error("the file was in place before the commit")
		}
		recorded = sum
		return nil
	}
	if err := WriteFile(path, Header{Generation: 1}, img, WithKey(testKey), WithCommit(record), WithMode(0o640)); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if !bytes.Equal(recorded[:], raw[len(raw)-checksumLen:]) {
		t.Fatalf("commit got %x, the file ends with %x", recorded, raw[len(raw)-checksumLen:])
	}
	if st, _ := os.Stat(path); runtime.GOOS != "windows" && st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want 0640", st.Mode().Perm())
	}
	refuse := errors.New("the database refused the record")
	if err := WriteFile(path, Header{Generation: 2}, img, WithKey(testKey), WithCommit(func([32]byte) error { return refuse })); !errors.Is(err, refuse) {
		t.Fatalf("a failing commit: %v", err)
	}
	if s, err := ReadFile(path, WithKey(testKey)); err != nil || s.Generation != 1 {
		t.Fatalf("after a failing commit: %+v, %v; want the previous file", s, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("a failing commit left %d entries", len(entries))
	}
}

func TestWriteFileCleansUpOnError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "filter.sfb")
	img, _ := build(t, testParams(t, 100), keys("k", 10))
	bad := Header{Policy: "a policy name far longer than sixteen bytes"}
	if err := WriteFile(path, bad, img, WithKey(testKey)); err == nil {
		t.Fatal("WriteFile accepted an unencodable header")
	}
	if err := WriteFile(path, Header{}, img); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("WriteFile without the key = %v, want ErrWrongKey", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("failed write left %d files behind", len(entries))
	}
	if err := WriteFile(filepath.Join(dir, "missing", "filter.sfb"), Header{}, img, WithKey(testKey)); err == nil {
		t.Fatal("WriteFile into a missing directory succeeded")
	}
}

// TestWriteFileSweepsStaleTempFiles: a save removes the stale temporary
// files crashed writers left, and nothing else: not a live writer's, not
// another snapshot's, not an app's file whose name merely starts like
// them, not one holding something other than a snapshot.
func TestWriteFileSweepsStaleTempFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "filter.sfb")
	half := string(Magic[:]) + "half a snapshot"
	stale := filepath.Join(dir, "filter.sfb.tmp-0123456789abcdef")
	staleOld := filepath.Join(dir, "filter.sfb.tmp-123") // os.CreateTemp's decimal name
	kept := map[string]string{
		filepath.Join(dir, "filter.sfb.tmp-456"):              half, // fresh: a live writer's
		filepath.Join(dir, "other.sfb.tmp-0123456789abcdef"):  half,
		filepath.Join(dir, "filter.sfb.tmp-notes"):            half,
		filepath.Join(dir, "filter.sfb.tmp-fedcba9876543210"): "an app's own text",
	}
	for _, name := range []string{stale, staleOld} {
		if err := os.WriteFile(name, []byte(half), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range kept {
		if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * StaleTemp)
	for name := range kept {
		if !strings.HasSuffix(name, "tmp-456") {
			_ = os.Chtimes(name, old, old)
		}
	}
	for _, name := range []string{stale, staleOld} {
		if err := os.Chtimes(name, old, old); err != nil {
			t.Fatal(err)
		}
	}
	img, _ := build(t, testParams(t, 100), keys("k", 10))
	for range 2 { // every save sweeps
		if err := WriteFile(path, Header{}, img, WithKey(testKey)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{stale, staleOld} {
		if _, err := os.Stat(name); !os.IsNotExist(err) {
			t.Fatalf("stale temp file %s survived: %v", name, err)
		}
	}
	for name, content := range kept {
		if got, err := os.ReadFile(name); err != nil || string(got) != content {
			t.Fatalf("%s removed or changed: it may belong to a live writer or to the app (%v)", name, err)
		}
	}
}

func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadFile(filepath.Join(dir, "none.sfb")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	enc := smallSnapshot(t, MaxVersion)
	path := filepath.Join(dir, "cut.sfb")
	if err := os.WriteFile(path, enc[:len(enc)-1], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path, WithKey(testKey)); !errors.Is(err, ErrTruncated) {
		t.Fatalf("truncated file: %v", err)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// FuzzDecode: no input panics, and a snapshot comes back exactly when no
// error does, with the key (testKey) and without. Inputs that decode must
// encode back to the same bytes; a version 2 input never decodes without
// its key; Verify, which needs no key, agrees with the keyed decode.
func FuzzDecode(f *testing.F) {
	for _, v := range versions {
		enc := smallSnapshot(f, v)
		f.Add(enc)
		f.Add(forgeHeader(f, v, 1<<60))
		r := rand.New(rand.NewPCG(5, uint64(v)))
		for i := 0; i < 20; i++ {
			b := slices.Clone(enc)
			b[r.IntN(len(b))] ^= byte(1 + r.IntN(255))
			f.Add(b)
		}
	}
	f.Add([]byte{})
	for _, name := range fixtureFiles(f) {
		if b, err := os.ReadFile(name); err == nil && len(b) < 1<<16 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, opts := range [][]Option{nil, {WithKey(testKey)}} {
			s, err := Decode(bytes.NewReader(in), opts...)
			if (s == nil) == (err == nil) {
				t.Fatalf("Decode returned %v and %v", s, err)
			}
			if err != nil {
				continue
			}
			if opts == nil && s.Version >= Version2 {
				t.Fatalf("version %d decoded without its key", s.Version)
			}
			if _, _, _, verr := Verify(bytes.NewReader(in)); verr != nil {
				t.Fatalf("Decode accepted what Verify refuses: %v", verr)
			}
			var out bytes.Buffer
			if err := Encode(&out, s.Header, s.Image, WithKey(s.Params.Key)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), in) {
				t.Fatalf("decoded input re-encodes differently at byte %d", firstDiff(out.Bytes(), in))
			}
		}
	})
}

// fixtureFiles lists the committed snapshots, to seed the fuzzer.
func fixtureFiles(t testing.TB) []string {
	names, _ := filepath.Glob(filepath.Join("..", "fixtures", "v*", "*.sfb"))
	return names
}

// TestBytesPolicy: a filter that compares bytes is written with policy
// bytes/1 and read back comparing bytes, its NFC and NFD keys apart; a
// header naming the other known policy than its filter is refused.
func TestBytesPolicy(t *testing.T) {
	p := testParams(t, 100)
	p.Compare = syncfilter.CompareBytes
	nfd, nfc := "cafe\u0301", "caf\u00e9"
	img, enc := build(t, p, []string{nfd})
	s, err := Decode(bytes.NewReader(enc), WithKey(testKey))
	if err != nil {
		t.Fatal(err)
	}
	if s.Header.Policy != syncfilter.PolicyBytes || s.Header.Params != p {
		t.Fatalf("policy %q, params %+v", s.Header.Policy, s.Header.Params)
	}
	if err := s.CheckNormalization(); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckPolicy("nfc/1", s.UnicodeVersion); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("a bytes/1 snapshot passes the canonical check: %v", err)
	}
	want, _ := img.Positions(nfc)
	got, _ := s.Image.Positions(nfc)
	other, _ := s.Image.Positions(nfd)
	if !slices.Equal(got, want) || slices.Equal(got, other) {
		t.Fatalf("decoded positions: nfc %v (built %v), nfd %v", got, want, other)
	}
	var buf bytes.Buffer
	if err := Encode(&buf, Header{Policy: "nfc/1", DatasetID: [16]byte{1}}, img, WithKey(testKey)); !errors.Is(err, syncfilter.ErrInvalidParams) {
		t.Fatalf("a bytes filter written as nfc/1: %v", err)
	}
}
