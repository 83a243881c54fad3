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

	ctx := context.Background()
	params, _ := syncfilter.NewParams(10_000, 0.01)
	f, _ := syncfilter.New(params)
	defer f.Close()
	_ = f.AddBatch(ctx, []string{"rec-1", "rec-2", "rec-3"})

	img, _ := f.Image(ctx) // a consistent copy, taken by the writer goroutine
	if err := snapshot.WriteFile(path, snapshot.Header{Generation: 3}, img); err != nil {
		panic(err)
	}

	s, err := snapshot.ReadFile(path) // verified before it is returned
	if err != nil {
		panic(err)
	}
	maybe, _ := s.Image.MightContain("rec-2")
	fmt.Println("version", s.Version, "generation", s.Generation, "items", s.Items, "rec-2 maybe:", maybe)

	// Damage one byte: the snapshot is refused, never half-used.
	raw, _ := os.ReadFile(path)
	raw[len(raw)/2] ^= 0x10
	_ = os.WriteFile(path, raw, snapshot.FileMode)
	_, err = snapshot.ReadFile(path)
	fmt.Println(errors.Is(err, snapshot.ErrChecksum))
	// Output:
	// version 1 generation 3 items 3 rec-2 maybe: true
	// true
}
