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
	committed, err := os.ReadFile("../../hash8_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), committed) {
		t.Fatal("syncfilter/hash8_amd64.s is stale: run go generate ./syncfilter")
	}
}
