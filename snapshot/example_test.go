package snapshot_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/syncfilter/syncfilter/snapshot"
	"github.com/syncfilter/syncfilter/syncfilter"
)

func ExampleWriteFile() {
	dir, _ := os.MkdirTemp("", "snapshot-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "records.sfb")

	// The key of the positions is kept in the database, never in the file:
	// the filter is built with it, and every read and write is given it.
	params, _ := syncfilter.NewParams(10_000, 0.01)
	key := params.Key // random; package rebuild stores it in the database
	ctx := context.Background()
	f, _ := syncfilter.New(params)
	defer f.Close()
	_ = f.AddBatch(ctx, []string{"rec-1", "rec-2", "rec-3"})

	img, _ := f.Image(ctx) // a consistent copy, taken by the writer goroutine
	if err := snapshot.WriteFile(path, snapshot.Header{Generation: 3}, img, snapshot.WithKey(key)); err != nil {
		panic(err)
	}

	// Without the key the file is only bytes: its header and checksum
	// check out, its bits answer nothing.
	_, err := snapshot.ReadFile(path)
	fmt.Println("without the key:", errors.Is(err, snapshot.ErrWrongKey))

	s, err := snapshot.ReadFile(path, snapshot.WithKey(key)) // verified before it is returned
	if err != nil {
		panic(err)
	}
	maybe, _ := s.Image.MightContain("rec-2")
	fmt.Println("version", s.Version, "generation", s.Generation, "items", s.Items, "rec-2 maybe:", maybe)

	// Damage one byte: the snapshot is refused, never half-used.
	raw, _ := os.ReadFile(path)
	raw[len(raw)/2] ^= 0x10
	_ = os.WriteFile(path, raw, snapshot.FileMode)
	_, err = snapshot.ReadFile(path, snapshot.WithKey(key))
	fmt.Println(errors.Is(err, snapshot.ErrChecksum))
	// Output:
	// without the key: true
	// version 2 generation 3 items 3 rec-2 maybe: true
	// true
}

func ExampleReadClaim() {
	dir, _ := os.MkdirTemp("", "snapshot-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "records.sfb")
	params, _ := syncfilter.NewParamsMK(4096, 7)
	img, _ := syncfilter.NewImage(params, 0, make([]uint64, params.M/64))
	_ = snapshot.WriteFile(path, snapshot.Header{Generation: 7}, img, snapshot.WithKey(params.Key))

	// A loader reads the claim (no payload, no key needed), and checks it
	// against what the database holds before it reads the bits: the
	// lowest version it accepts, its key, its record of the checksum.
	c, _ := snapshot.ReadClaim(path)
	fmt.Println("version", c.Version, "generation", c.Generation, "m", c.Params.M)
	fmt.Println("the database's key:", c.CheckKey(params.Key))
	other, _ := syncfilter.NewParamsMK(4096, 7) // another random key
	fmt.Println("another key:", errors.Is(c.CheckKey(other.Key), snapshot.ErrWrongKey))
	// Output:
	// version 2 generation 7 m 4096
	// the database's key: <nil>
	// another key: true
}
