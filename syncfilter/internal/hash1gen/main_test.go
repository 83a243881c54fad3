package main

import (
	"bytes"
	"os"
	"testing"
)

// TestGeneratedFileIsCurrent: the committed assembly is exactly what the
// generator writes, so nobody edits one without the other.
func TestGeneratedFileIsCurrent(t *testing.T) {
	var buf bytes.Buffer
	generate(&buf)
	committed, err := os.ReadFile("../../hash1_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), committed) {
		t.Fatal("syncfilter/hash1_amd64.s is stale: run go generate ./syncfilter")
	}
}

// TestLayoutIsAPermutation: every round's gathered message holds each of
// the 16 words once, and round 1 uses them in BLAKE3's order: column i
// takes words 2i and 2i+1, and lane i of the diagonal vectors diagonal
// (i+3) mod 4, words 8+2j and 9+2j.
func TestLayoutIsAPermutation(t *testing.T) {
	lay := layout()
	for r, words := range lay {
		var seen [16]bool
		for _, w := range words {
			if seen[w] {
				t.Fatalf("round %d: word %d twice", r+1, w)
			}
			seen[w] = true
		}
	}
	want := [16]int{0, 2, 4, 6, 1, 3, 5, 7, 14, 8, 10, 12, 15, 9, 11, 13}
	if lay[0] != want {
		t.Fatalf("round 1 = %v, want %v", lay[0], want)
	}
}
