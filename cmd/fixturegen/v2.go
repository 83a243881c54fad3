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
	for name, v := range map[string]any{"manifest.json": man, man.Database: db} {
		if out[name], err = marshal(v); err != nil {
			return nil, err
		}
	}
	return out, nil
}
