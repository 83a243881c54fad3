package snapshot

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/zeebo/blake3"

	"github.com/syncfilter/syncfilter/syncfilter"
)

// secretKey is a key that looks like one (no counting bytes that a
// search could meet by chance in a header).
func secretKey(label string) (k [32]byte) {
	return blake3.Sum256([]byte("snapshot test key " + label))
}

// TestKeyIDKnownAnswer pins the key id: the first 16 bytes of keyed
// BLAKE3 under the key of 0xFF "syncfilter snapshot key id".
func TestKeyIDKnownAnswer(t *testing.T) {
	for _, tc := range []struct {
		key  [32]byte
		want string
	}{
		{[32]byte{}, "5a30464e4c807deabf2cff934fcf5f3f"},
		{testKey, ""},
	} {
		h, _ := blake3.NewKeyed(tc.key[:])
		_, _ = h.Write(append([]byte{0xff}, "syncfilter snapshot key id"...))
		want := h.Sum(nil)[:16]
		got := KeyID(tc.key)
		if !bytes.Equal(got[:], want) {
			t.Fatalf("KeyID(%x) = %x, want %x", tc.key, got, want)
		}
		if tc.want != "" && hex.EncodeToString(got[:]) != tc.want {
			t.Fatalf("KeyID(%x) = %x, pinned %s", tc.key, got, tc.want)
		}
	}
	if _, err := (syncfilter.Params{Layout: syncfilter.LayoutBlocked512, Hash: syncfilter.HashBLAKE3Keyed, M: 512, K: 7}).Positions(keyIDMessage); err == nil {
		t.Fatal("the key id's message is a key: the key id would be the digest of an id")
	}
}

// TestVersion2HoldsNoKey: a version 2 file holds the key nowhere, no field
// but the key id depends on it, and no 32 bytes of the file, nor anything
// read from its fields, gives a key under which the ids it holds answer
// maybe: the file alone tests no id.
func TestVersion2HoldsNoKey(t *testing.T) {
	ids := keys("member", 1000)
	key := secretKey("a")
	p := testParams(t, 1000)
	p.Key = key
	img, enc := build(t, p, ids)

	for i := 0; i+8 <= len(key); i++ {
		if bytes.Contains(enc, key[i:i+8]) {
			t.Fatalf("bytes [%d, %d) of the key are in the file", i, i+8)
		}
	}

	// The same filter under another key: the headers differ only in the
	// key id and the header checksum.
	q := p
	q.Key = secretKey("b")
	_, other := build(t, q, ids)
	for i := 0; i < headerLen; i++ {
		inKeyID := i >= offKeyID && i < offKeyID+keyIDLen
		if enc[i] != other[i] && !inKeyID && i < offHeaderSum {
			t.Fatalf("header byte %d depends on the key", i)
		}
	}

	// A reader without the key gets the header, no key, no bits.
	path := filepath.Join(t.TempDir(), "s.sfb")
	if err := os.WriteFile(path, enc, 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := ReadHeader(path)
	if err != nil || h.Params.Key != ([32]byte{}) || h.KeyID != KeyID(key) {
		t.Fatalf("ReadHeader = %+v, %v", h, err)
	}
	if _, err := ReadFile(path); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("ReadFile without the key = %v, want ErrWrongKey", err)
	}

	// Whatever a guesser takes for the key, the ids answer at chance.
	var candidates [][32]byte
	for i := 0; i+32 <= len(enc); i++ {
		candidates = append(candidates, [32]byte(enc[i:i+32]))
	}
	var padded [32]byte
	copy(padded[:], h.KeyID[:])
	copy(padded[16:], h.KeyID[:])
	candidates = append(candidates, [32]byte{}, padded, blake3.Sum256(enc[:headerLen]), blake3.Sum256(enc), [32]byte(enc[len(enc)-checksumLen:]))
	words := img.Words()
	for _, c := range candidates {
		q := p
		q.Key = c
		guess, err := syncfilter.NewImage(q, 0, words)
		if err != nil {
			t.Fatal(err)
		}
		maybe, _ := guess.MightContainBatch(nil, ids)
		n := 0
		for _, ok := range maybe {
			if ok {
				n++
			}
		}
		if n > 100 {
			t.Fatalf("under key %x read from the file, %d of %d ids answer maybe", c, n, len(ids))
		}
	}
	right, _ := img.MightContainBatch(nil, ids)
	for i, ok := range right {
		if !ok {
			t.Fatalf("id %d absent under the right key", i)
		}
	}
}

// TestWrongKeyIsRefusedBeforeThePayload: every reader given another key
// refuses a version 2 file from its header, even one whose payload is
// missing; a reader that wants the bits refuses it without a key.
func TestWrongKeyIsRefusedBeforeThePayload(t *testing.T) {
	p := testParams(t, 1000)
	p.Key = secretKey("database")
	_, enc := build(t, p, keys("k", 100))
	dir := t.TempDir()
	whole, cut := filepath.Join(dir, "whole.sfb"), filepath.Join(dir, "cut.sfb")
	_ = os.WriteFile(whole, enc, 0o600)
	_ = os.WriteFile(cut, enc[:headerLen], 0o600)
	wrong := WithKey(secretKey("another"))
	for _, path := range []string{whole, cut} {
		for name, read := range map[string]func() error{
			"ReadFile":               func() error { _, err := ReadFile(path, wrong); return err },
			"ReadClaim":              func() error { _, err := ReadClaim(path, wrong); return err },
			"ReadHeader":             func() error { _, err := ReadHeader(path, wrong); return err },
			"VerifyFile":             func() error { _, _, _, err := VerifyFile(path, wrong); return err },
			"Decode":                 func() error { b, _ := os.ReadFile(path); _, err := Decode(bytes.NewReader(b), wrong); return err },
			"Verify":                 func() error { b, _ := os.ReadFile(path); _, _, _, err := Verify(bytes.NewReader(b), wrong); return err },
			"ReadFile without a key": func() error { _, err := ReadFile(path); return err },
		} {
			if err := read(); !errors.Is(err, ErrWrongKey) {
				t.Errorf("%s of %s = %v, want ErrWrongKey", name, filepath.Base(path), err)
			}
		}
	}
	if _, _, _, err := VerifyFile(whole); err != nil {
		t.Fatalf("VerifyFile without a key = %v: integrity needs no key", err)
	}
	if _, err := ReadFile(whole, WithKey(p.Key)); err != nil {
		t.Fatal(err)
	}
}

// TestAVersion1KeyOpensNoVersion2File: the upgrade. The key a version 1
// file published (a backup of it, say) opens none of the version 2 files
// written with the database's new key, and that version 1 file, given
// the new key, is refused too.
func TestAVersion1KeyOpensNoVersion2File(t *testing.T) {
	ids := keys("k", 100)
	old := testParams(t, 1000)
	old.Key = secretKey("published in version 1")
	_, v1 := buildVersion(t, old, ids, Version1)
	s1, err := Decode(bytes.NewReader(v1)) // version 1: the key is in the file
	if err != nil || s1.Params.Key != old.Key {
		t.Fatalf("version 1 read without a key: %v", err)
	}
	fresh := old
	fresh.Key = secretKey("the database's new key")
	_, v2 := build(t, fresh, ids)
	if _, err := Decode(bytes.NewReader(v2), WithKey(s1.Params.Key)); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("version 2 opened with the version 1 key: %v", err)
	}
	if _, err := Decode(bytes.NewReader(v1), WithKey(fresh.Key)); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("version 1 file given the new key: %v, want ErrWrongKey", err)
	}
	if _, err := Decode(bytes.NewReader(v2), WithKey(fresh.Key)); err != nil {
		t.Fatal(err)
	}
}

// TestWritersTakeTheDatabasesKey: version 2 is written only with the key
// of the image's positions; WriteFile writes no version 1 file.
func TestWritersTakeTheDatabasesKey(t *testing.T) {
	p := testParams(t, 1000)
	img, _ := build(t, p, keys("k", 10))
	var buf bytes.Buffer
	if err := Encode(&buf, Header{}, img, WithKey(secretKey("not the image's"))); !errors.Is(err, ErrWrongKey) || buf.Len() != 0 {
		t.Fatalf("Encode with another key than the image's = %v, %d bytes", err, buf.Len())
	}
	if err := Encode(&buf, Header{}, img); !errors.Is(err, ErrWrongKey) || buf.Len() != 0 {
		t.Fatalf("Encode of version 2 without a key = %v, %d bytes", err, buf.Len())
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "s.sfb")
	if err := WriteFile(path, Header{Version: Version1}, img, WithKey(testKey)); err == nil {
		t.Fatal("WriteFile wrote version 1")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("refused writes left %d files", len(entries))
	}
}
