package main

import (
	"os"
	"testing"
	"unicode"
)

// TestAssignedTable: the committed table is what the generator writes
// from this toolchain's unicode package, when that package is of the
// pinned version (Go 1.26); newer toolchains skip it.
func TestAssignedTable(t *testing.T) {
	if unicode.Version != pinned {
		t.Skipf("Go's unicode package is %s, not %s", unicode.Version, pinned)
	}
	got, err := os.ReadFile("../../assigned.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := Source(Ranges()); string(got) != want {
		t.Fatal("normalize/assigned.go differs from the generator's output: go run ./normalize/internal/assignedgen > normalize/assigned.go")
	}
	n := 0
	for _, r := range Ranges() {
		n += int(r[1]-r[0]) + 1
	}
	// Unicode 15.0.0: 149,186 characters, 137,468 private-use and 2,048
	// surrogate code points, 65 controls (counted among the characters'
	// general categories here), 0 for Cn.
	if n < 280_000 || n > 300_000 {
		t.Fatalf("%d assigned code points", n)
	}
}
