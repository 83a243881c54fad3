package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteCheckAndRefuseRewrite(t *testing.T) {
	root := t.TempDir()
	var out, errb bytes.Buffer
	if code := run([]string{"-out", root}, &out, &errb); code != 0 {
		t.Fatalf("write: exit %d: %s", code, errb.String())
	}
	out.Reset()
	if code := run([]string{"-out", root, "-check"}, &out, &errb); code != 0 {
		t.Fatalf("check of fresh output: exit %d: %s %s", code, out.String(), errb.String())
	}
	// Damage one byte of a snapshot: -check names the file and offset,
	// and writing again refuses to rewrite it.
	path := filepath.Join(root, "v1", "ascii.sfb")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw[300] ^= 1
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"-out", root, "-check"}, &out, &errb); code != 1 || !strings.Contains(out.String(), "ascii.sfb: first difference at byte offset 300") {
		t.Fatalf("check of damaged output: exit %d, stdout %q", code, out.String())
	}
	errb.Reset()
	if code := run([]string{"-out", root}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "never rewritten") {
		t.Fatalf("rewrite without -force: exit %d, stderr %q", code, errb.String())
	}
	if code := run([]string{"-out", root, "-bogus"}, &out, &errb); code != 2 {
		t.Fatalf("bad flag: exit %d", code)
	}
}

// TestCommittedFixturesMatch is `make fixtures-check` inside `go test`.
func TestCommittedFixturesMatch(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-out", filepath.Join("..", "..", "fixtures"), "-check"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
}
