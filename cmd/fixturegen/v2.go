package main

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/zeebo/blake3"

	"github.com/syncfilter/syncfilter/normalize"
	"github.com/syncfilter/syncfilter/snapshot"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// Version 2's fixtures are version 1's files (and its k = 21 file) built
// again with keys no file holds: database.json gives them to a reader as
// the database would. They are new keys, not version 1's: the first
// snapshot of version 2 takes a key that no version 1 file published.
var fixedDatasetV2 = [16]byte{'f', 'i', 'x', 't', 'u', 'r', 'e', 's', '/', 'v', '2', ' ', 'd', 'a', 't', 'a'}

// databaseKey is the key the database holds for the fixture file.
func databaseKey(file string) [32]byte {
	return blake3.Sum256([]byte("fixtures/v2 database key of " + file))
}

// Database is fixtures/v2/database.json: what the database holds beside
// the files, given to a reader apart from them.
type Database struct {
	Note          string        `json:"note"`
	LowestVersion int           `json:"lowest_version"` // the lowest snapshot version the database accepts
	Keys          []DatabaseKey `json:"keys"`
}

// DatabaseKey is the key of one file's positions.
type DatabaseKey struct {
	File    string `json:"file"`
	HashKey string `json:"hash_key"`
}

// ConformanceV2 is fixtures/v2/conformance.json. docs/FORMAT.md
// ("Conformance") documents every field.
type ConformanceV2 struct {
	Policy         string           `json:"policy"`
	UnicodeVersion string           `json:"unicode_version"`
	AssignedFile   string           `json:"unicode_assigned"`
	Positions      string           `json:"positions"` // the vector sets of version 1: the derivation is the same
	KeyIDMessage   string           `json:"key_id_message_hex"`
	KeyIDs         []KeyIDVector    `json:"key_ids"`
	VectorSets     []VectorSet      `json:"vector_sets"`
	WrongKeys      []WrongKey       `json:"wrong_keys"`
	Damaged        []DamagedVariant `json:"damaged"`
}

// KeyIDVector pins the key id of one key.
type KeyIDVector struct {
	Why     string `json:"why"`
	HashKey string `json:"hash_key"`
	KeyID   string `json:"key_id"`
}

// WrongKey is a file and a key it must be refused with (kind wrong_key).
type WrongKey struct {
	File    string `json:"file"`
	HashKey string `json:"hash_key"` // "": no key
	Why     string `json:"why"`
	Kind    string `json:"kind"`
}

// headerV2 is what every version 2 fixture's header says besides its
// filter.
func headerV2(unicodeVersion string) snapshot.Header {
	return snapshot.Header{Version: snapshot.Version2, DatasetID: fixedDatasetV2, Created: fixedCreated,
		Policy: normalize.Policy, UnicodeVersion: unicodeVersion}
}

func fixturesV2() ([]fixture, error) {
	fs, err := fixtures()
	if err != nil {
		return nil, err
	}
	fs = append(fs, largeK(syncfilter.Params{Layout: syncfilter.LayoutBlocked512, Hash: syncfilter.HashBLAKE3Keyed, M: 64 * 512, K: syncfilter.MaxK}))
	for i := range fs {
		fs[i].params.Key = databaseKey(fs[i].name)
		fs[i].keysFile = "../v1/" + fs[i].keysFile // the same ids as version 1's
	}
	return fs, nil
}

// generateV2 builds every file of fixtures/v2 in memory.
func generateV2(unicodeVersion string) (map[string][]byte, error) {
	fs, err := fixturesV2()
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	man := Manifest{
		FormatVersion:  int(snapshot.Version2),
		Generator:      "go run ./cmd/fixturegen -out fixtures",
		Policy:         normalize.Policy,
		UnicodeVersion: unicodeVersion,
		Database:       "database.json",
	}
	db := Database{
		Note: "What the database holds, given to a reader apart from the files (in an app: the library's tables in its SQLite database). " +
			"No .sfb file of this folder holds its key.",
		LowestVersion: int(snapshot.Version2),
	}
	for _, fx := range fs {
		snap, err := build(fx, headerV2(unicodeVersion))
		if err != nil {
			return nil, fmt.Errorf("build %s: %w", fx.name, err)
		}
		out[fx.name] = snap
		sum, id := blake3.Sum256(snap), snapshot.KeyID(fx.params.Key)
		man.Files = append(man.Files, ManifestFile{
			File: fx.name, FormatVersion: int(snapshot.Version2),
			Layout: fx.params.Layout.String(), Hash: fx.params.Hash.String(),
			M: fx.params.M, K: fx.params.K, KeyID: hex.EncodeToString(id[:]),
			Items: uint64(len(fx.insert)), Capacity: fx.capacity, Generation: fx.generation,
			DatasetID: hex.EncodeToString(fixedDatasetV2[:]), Created: fixedCreated.Format(time.RFC3339Nano),
			Keys: fx.keysFile, Inserted: fx.inserted, Blake3: hex.EncodeToString(sum[:]), Bytes: len(snap),
		})
		db.Keys = append(db.Keys, DatabaseKey{File: fx.name, HashKey: hex.EncodeToString(fx.params.Key[:])})
	}
	conf, err := conformanceV2(out, fs)
	if err != nil {
		return nil, err
	}
	for name, v := range map[string]any{"manifest.json": man, man.Database: db, "conformance.json": conf} {
		if out[name], err = marshal(v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func conformanceV2(files map[string][]byte, fs []fixture) (ConformanceV2, error) {
	c := ConformanceV2{
		Policy: normalize.Policy, UnicodeVersion: normalize.PinnedUnicode,
		AssignedFile: "../v1/unicode-15.0.0-assigned.txt",
		Positions:    "../v1/conformance.json",
		KeyIDMessage: hex.EncodeToString([]byte("\xffsyncfilter snapshot key id")),
	}
	ascii := fs[0].params
	if fs[0].name != "ascii.sfb" {
		return c, fmt.Errorf("the first fixture is %s, not ascii.sfb", fs[0].name)
	}
	var ones [32]byte
	for i := range ones {
		ones[i] = 0xff
	}
	keyIDs := []struct {
		why string
		key [32]byte
	}{
		{"the all-zero key", [32]byte{}},
		{"the all-ones key", ones},
		{"the key version 1's ascii.sfb publishes in its header", fixedKey(0)},
	}
	for _, fx := range fs {
		keyIDs = append(keyIDs, struct {
			why string
			key [32]byte
		}{"the database's key of " + fx.name, fx.params.Key})
	}
	for _, k := range keyIDs {
		id := snapshot.KeyID(k.key)
		c.KeyIDs = append(c.KeyIDs, KeyIDVector{Why: k.why, HashKey: hex.EncodeToString(k.key[:]), KeyID: hex.EncodeToString(id[:])})
	}

	// Positions under a key a reader gets from the database, not the file.
	set, err := fillSet(VectorSet{Name: "ascii.sfb's parameters under the database's key", Layout: ascii.Layout.String(), Hash: ascii.Hash.String(),
		HashKey: hex.EncodeToString(ascii.Key[:]), M: ascii.M, K: ascii.K, Blocks: ascii.M / syncfilter.BlockBits})
	if err != nil {
		return c, err
	}
	c.VectorSets = []VectorSet{set}

	flipped := ascii.Key
	flipped[31] ^= 0x80
	id := snapshot.KeyID(ascii.Key)
	var padded [32]byte
	copy(padded[:], id[:])
	v1Key := fixedKey(0)
	for _, w := range []struct {
		file string
		key  []byte
		why  string
	}{
		{"ascii.sfb", v1Key[:], "the key version 1's ascii.sfb publishes in its header: a copy of an old file opens none of the new ones"},
		{"ascii.sfb", flipped[:], "the database's key with its last bit flipped"},
		{"ascii.sfb", make([]byte, 32), "the all-zero key"},
		{"ascii.sfb", padded[:], "the file's key id, padded with zeros: the key id is not the key"},
		{"ascii.sfb", fs[2].params.Key[:], "the database's key of another file (tiny.sfb)"},
		{"ascii.sfb", nil, "no key: the payload is decoded only with the database's key (verifying the checksums needs none)"},
		{"../v1/ascii.sfb", ascii.Key[:], "a version 1 file given the database's new key (and below the lowest version the database accepts)"},
	} {
		c.WrongKeys = append(c.WrongKeys, WrongKey{File: w.file, HashKey: hex.EncodeToString(w.key), Why: w.why, Kind: "wrong_key"})
	}

	tiny := files["tiny.sfb"]
	if c.Damaged, err = damagedVariants("tiny.sfb", tiny); err != nil {
		return c, err
	}
	c.Damaged = append(c.Damaged,
		DamagedVariant{Base: "tiny.sfb", Edit: "xor", At: 8, Hex: "03", Kind: "corrupt_header", Why: "version 1 claimed: the header checksum covers the version"},
		DamagedVariant{Base: "tiny.sfb", Edit: "xor", At: 32, Hex: "01", Kind: "corrupt_header", Why: "the key id, covered by the header checksum"},
		DamagedVariant{Base: "tiny.sfb", Edit: "xor", At: 50, Hex: "01", Kind: "corrupt_header", Why: "bytes [48, 64), zero in version 2"},
	)
	return c, nil
}
