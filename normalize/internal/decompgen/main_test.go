package main

import (
	"os"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// TestDecompositionTable: the committed table is what the generator
// writes from tables of the pinned version.
func TestDecompositionTable(t *testing.T) {
	if norm.Version != pinned {
		t.Skipf("norm tables are %s, not %s", norm.Version, pinned)
	}
	ds, err := Decompositions()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../decompose.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := Source(ds); string(got) != want {
		t.Fatal("normalize/decompose.go differs from the generator's output: go run ./normalize/internal/decompgen > /tmp/decompose.go && mv /tmp/decompose.go normalize/decompose.go")
	}
	// Unicode 15.0.0: 2,061 canonical decompositions besides the 11,172
	// Hangul syllables.
	if len(ds) != 2061 {
		t.Fatalf("%d decompositions", len(ds))
	}
}
