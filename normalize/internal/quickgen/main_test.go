package main

import (
	"os"
	"testing"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// TestQuickTable: the committed table is what the generator writes from
// this toolchain's tables, when they are of the pinned version (Go 1.26);
// newer toolchains skip it (the normalize tests check the table's
// strings against their NFC there).
func TestQuickTable(t *testing.T) {
	if unicode.Version != pinned || norm.Version != pinned {
		t.Skipf("tables are unicode %s, norm %s, not %s", unicode.Version, norm.Version, pinned)
	}
	got, err := os.ReadFile("../../quick.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := Source(Quick()); string(got) != want {
		t.Fatal("normalize/quick.go differs from the generator's output: go run ./normalize/internal/quickgen > normalize/quick.go")
	}
}

// TestIsQuickRefusesWhatNFCChanges: no quick code point changes under
// NFC, alone or after every ASCII letter (the bases that compose).
func TestIsQuickRefusesWhatNFCChanges(t *testing.T) {
	if norm.Version != pinned {
		t.Skipf("norm tables are %s", norm.Version)
	}
	n := 0
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if !IsQuick(r) {
			continue
		}
		n++
		for _, base := range []string{"", "a", "A", "e", "o", "u", "\u1100", "\uac00"} {
			s := base + string(r)
			if !norm.NFC.IsNormalString(s) || norm.NFC.String(s) != s {
				t.Fatalf("U+%04X after %q changes under NFC", r, base)
			}
		}
	}
	t.Logf("%d quick code points", n)
}
