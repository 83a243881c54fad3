package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/zeebo/blake3"

	"github.com/syncfilter/syncfilter/internal/keycorpus"
	"github.com/syncfilter/syncfilter/normalize"
	"github.com/syncfilter/syncfilter/snapshot"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// Everything that makes the fixtures reproducible.
var (
	fixedCreated = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	fixedDataset = [16]byte{'f', 'i', 'x', 't', 'u', 'r', 'e', 's', '/', 'v', '1', ' ', 'd', 'a', 't', 'a'}
)

func fixedKey(seed byte) (k [32]byte) {
	for i := range k {
		k[i] = seed + byte(i)
	}
	return k
}

// Manifest describes one version folder. The fixtures test reads it.
type Manifest struct {
	FormatVersion  int            `json:"format_version"`
	Generator      string         `json:"generator"`
	Policy         string         `json:"policy"`
	UnicodeVersion string         `json:"unicode_version"`
	Files          []ManifestFile `json:"files"`
	Vectors        string         `json:"vectors,omitempty"`  // version 1: position vectors
	Database       string         `json:"database,omitempty"` // version 2: the keys, as the database holds them
}

// ManifestFile is one snapshot and the keys it was built from.
type ManifestFile struct {
	File          string `json:"file"`
	FormatVersion int    `json:"format_version"`
	Layout        string `json:"layout"`
	Hash          string `json:"hash"`
	M             uint64 `json:"m"`
	K             uint32 `json:"k"`
	HashKey       string `json:"hash_key,omitempty"` // version 1: in the file's header
	KeyID         string `json:"key_id,omitempty"`   // version 2: in the header; the key is in Manifest.Database
	Items         uint64 `json:"items"`
	Capacity      uint64 `json:"capacity"`
	Generation    uint64 `json:"generation"`
	DatasetID     string `json:"dataset_id"`
	Created       string `json:"created"`
	Keys          string `json:"keys"`     // JSON array of every key that must answer maybe (a path relative to the folder)
	Inserted      string `json:"inserted"` // how the keys went in
	Blake3        string `json:"blake3"`   // BLAKE3-256 of the snapshot file
	Bytes         int    `json:"bytes"`
}

// Vectors pin the position derivation: for each key, its canonical bytes,
// digest and positions under one hash key, m and k.
type Vectors struct {
	HashKey string   `json:"hash_key"`
	M       uint64   `json:"m"`
	K       uint32   `json:"k"`
	Layout  string   `json:"layout"`
	Hash    string   `json:"hash"`
	Entries []Vector `json:"entries"`
}

// Vector is one key of Vectors.
type Vector struct {
	Key       string   `json:"key"`
	Canonical string   `json:"canonical_hex"`
	Digest    string   `json:"digest_hex"`
	Positions []uint64 `json:"positions"`
}

// fixture is one snapshot to generate.
type fixture struct {
	name, keysFile, inserted string
	keys                     []string // every key that must answer maybe
	insert                   []string // the spellings actually inserted
	params                   syncfilter.Params
	capacity, generation     uint64
}

// asciiIDs returns n UUID-shaped ids from a fixed splitmix64 sequence.
func asciiIDs(n int) []string {
	out := make([]string, n)
	x := uint64(0x5eed)
	next := func() uint64 {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		return z ^ z>>31
	}
	for i := range out {
		a, b := next(), next()
		out[i] = fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", a>>32, a>>16&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
	}
	return out
}

func fixtures() ([]fixture, error) {
	sized := func(n uint64, fpr float64, seed byte) (syncfilter.Params, error) {
		p, err := syncfilter.NewParams(n, fpr)
		p.Key = fixedKey(seed)
		return p, err
	}
	ascii := asciiIDs(2000)
	pa, err := sized(uint64(len(ascii)), 0.01, 0)
	if err != nil {
		return nil, err
	}
	// Unicode: every spelling must answer maybe, but only the last spelling
	// of each group (an NFD or otherwise non-NFC one where there is one) is
	// inserted, so the fixture also proves canonical equivalence.
	var all, insert []string
	for _, g := range keycorpus.Groups() {
		all = append(all, g.Spellings...)
		insert = append(insert, g.Spellings[len(g.Spellings)-1])
	}
	all = append(all, strings.Repeat("long-ascii-key/", 70), "\u4e2d\u6587\u8bb0\u5f55/"+strings.Repeat("\u540c\u6b65", 100))
	insert = append(insert, all[len(all)-2:]...)
	pu, err := sized(500, 0.001, 32) // room to spare: 16 blocks, so block selection is exercised
	if err != nil {
		return nil, err
	}
	tiny := syncfilter.Params{Layout: syncfilter.LayoutBlocked512, Hash: syncfilter.HashBLAKE3Keyed, M: 512, K: 7, Key: fixedKey(64)}
	return []fixture{
		{name: "ascii.sfb", keysFile: "keys-ascii.json", inserted: "every key, once", keys: ascii, insert: ascii, params: pa, capacity: 2000, generation: 2000},
		{name: "unicode.sfb", keysFile: "keys-unicode.json", inserted: "one spelling per canonical-equivalence group: the last of keycorpus.Groups, then the long keys", keys: all, insert: insert, params: pu, capacity: 500, generation: 77},
		{name: "tiny.sfb", keysFile: "keys-tiny.json", inserted: "every key, once", keys: []string{"a", "b", "c"}, insert: []string{"a", "b", "c"}, params: tiny, capacity: 3, generation: 3},
		{name: "empty.sfb", keysFile: "keys-empty.json", inserted: "nothing", keys: []string{}, params: syncfilter.Params{Layout: syncfilter.LayoutBlocked512, Hash: syncfilter.HashBLAKE3Keyed, M: 1024, K: 3, Key: fixedKey(96)}},
	}, nil
}

// generateV1 builds every file of fixtures/v1 in memory. unicodeVersion
// is the version recorded in headers and manifest.
func generateV1(unicodeVersion string) (map[string][]byte, error) {
	fs, err := fixtures()
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	man := Manifest{
		FormatVersion:  int(snapshot.Version1),
		Generator:      "go run ./cmd/fixturegen -out fixtures",
		Policy:         normalize.Policy,
		UnicodeVersion: unicodeVersion,
		Vectors:        "vectors.json",
	}
	for _, fx := range fs {
		snap, err := build(fx, headerV1(unicodeVersion))
		if err != nil {
			return nil, fmt.Errorf("build %s: %w", fx.name, err)
		}
		keys, err := marshal(fx.keys)
		if err != nil {
			return nil, err
		}
		out[fx.name], out[fx.keysFile] = snap, keys
		sum := blake3.Sum256(snap)
		man.Files = append(man.Files, ManifestFile{
			File: fx.name, FormatVersion: int(snapshot.Version1),
			Layout: fx.params.Layout.String(), Hash: fx.params.Hash.String(),
			M: fx.params.M, K: fx.params.K, HashKey: hex.EncodeToString(fx.params.Key[:]),
			Items: uint64(len(fx.insert)), Capacity: fx.capacity, Generation: fx.generation,
			DatasetID: hex.EncodeToString(fixedDataset[:]), Created: fixedCreated.Format(time.RFC3339Nano),
			Keys: fx.keysFile, Inserted: fx.inserted, Blake3: hex.EncodeToString(sum[:]), Bytes: len(snap),
		})
	}
	if out["manifest.json"], err = marshal(man); err != nil {
		return nil, err
	}
	vec, err := vectors()
	if err != nil {
		return nil, err
	}
	if out[man.Vectors], err = marshal(vec); err != nil {
		return nil, err
	}
	// Added after version 1 was released, beside its files (which stay
	// byte-identical): the conformance kit of docs/FORMAT.md.
	conf, files, err := conformance(out)
	if err != nil {
		return nil, err
	}
	for name, b := range files {
		out[name] = b
	}
	if out["conformance.json"], err = marshal(conf); err != nil {
		return nil, err
	}
	return out, nil
}

// headerV1 is what every version 1 fixture's header says besides its
// filter.
func headerV1(unicodeVersion string) snapshot.Header {
	return snapshot.Header{Version: snapshot.Version1, DatasetID: fixedDataset, Created: fixedCreated,
		Policy: normalize.Policy, UnicodeVersion: unicodeVersion}
}

// build encodes a filter holding fx.insert under fx.params, with h's
// version, dataset, time and policy.
func build(fx fixture, h snapshot.Header) ([]byte, error) {
	f, err := syncfilter.New(fx.params)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ctx := context.Background()
	if err := f.AddBatch(ctx, fx.insert); err != nil {
		return nil, err
	}
	img, err := f.Image(ctx)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	h.Capacity, h.Generation = fx.capacity, fx.generation
	if err := snapshot.Encode(&buf, h, img, snapshot.WithKey(fx.params.Key)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func vectors() (Vectors, error) {
	p := syncfilter.Params{Layout: syncfilter.LayoutBlocked512, Hash: syncfilter.HashBLAKE3Keyed, M: 1 << 20, K: 7, Key: fixedKey(0)}
	img, err := syncfilter.NewImage(p, 0, make([]uint64, p.M/64))
	if err != nil {
		return Vectors{}, err
	}
	v := Vectors{HashKey: hex.EncodeToString(p.Key[:]), M: p.M, K: p.K, Layout: p.Layout.String(), Hash: p.Hash.String()}
	keys := []string{"", "a", "a\x00b", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", strings.Repeat("0123456789", 10)}
	for _, g := range keycorpus.Groups() {
		for _, s := range g.Spellings {
			if len(s) <= 64 {
				keys = append(keys, s)
			}
		}
	}
	for _, k := range keys {
		c, err := normalize.String(k)
		if err != nil {
			return Vectors{}, err
		}
		pos, err := img.Positions(k)
		if err != nil {
			return Vectors{}, err
		}
		h, _ := blake3.NewKeyed(p.Key[:])
		_, _ = h.WriteString(c)
		v.Entries = append(v.Entries, Vector{Key: k, Canonical: hex.EncodeToString([]byte(c)), Digest: hex.EncodeToString(h.Sum(nil)), Positions: pos})
	}
	return v, nil
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
