package main

import (
	"os"
	"testing"
)

// ucd returns the database directory, or skips the test when it is not
// installed (make test installs it and sets SYNCFILTER_REQUIRE_UCD, which
// turns the skip into a failure).
func ucd(t *testing.T) string {
	dir := Dir()
	if _, err := os.Stat(dir + "/UnicodeData.txt"); err != nil {
		if os.Getenv("SYNCFILTER_REQUIRE_UCD") != "" {
			t.Fatalf("the Unicode Character Database is not installed: %v (Debian: apt-get install unicode-data)", err)
		}
		t.Skipf("the Unicode Character Database is not installed: %v (Debian: apt-get install unicode-data)", err)
	}
	return dir
}

// TestCompositionTable: the committed table is what the generator writes
// from the Unicode Character Database of the pinned version.
func TestCompositionTable(t *testing.T) {
	pairs, err := Compositions(ucd(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../compose.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := Source(pairs); string(got) != want {
		t.Fatal("normalize/compose.go differs from the generator's output: go run ./normalize/internal/compgen > normalize/compose.go")
	}
	// Unicode 15.0.0: 2,061 canonical decompositions, of which 1,120 are
	// Full_Composition_Exclusion or singletons; 941 primary composites
	// besides the 11,172 Hangul syllables.
	if len(pairs) != 941 {
		t.Fatalf("%d primary composites", len(pairs))
	}
}
