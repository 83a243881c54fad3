package store

import (
	"errors"
	"slices"
	"testing"
)

// TestParsePositions: positions SQLite names are taken only when they are
// a JSON array of integers below the number of keys asked; anything else
// is an error, never a panic or a position out of range.
func TestParsePositions(t *testing.T) {
	for _, tc := range []struct {
		list string
		want []int
	}{
		{"[]", nil},
		{"[0]", []int{10}},
		{"[0,2,3]", []int{10, 12, 13}},
		{"[3,1]", []int{13, 11}},
	} {
		got, err := parsePositions(tc.list, 10, 4, nil)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parsePositions(%q) = %v, %v; want %v", tc.list, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "[", "]", "[,]", "[1,]", "[,1]", "[4]", "[-1]", "[1 2]", "[1,,2]", `["a"]`, "[1.5]", "[99999999999999999999]", "null", "[0]x"} {
		if got, err := parsePositions(bad, 0, 4, nil); !errors.Is(err, errKeyArray) {
			t.Errorf("parsePositions(%q) = %v, %v; want errKeyArray", bad, got, err)
		}
	}
}

// FuzzParsePositions: whatever the text, every position taken is in range.
func FuzzParsePositions(f *testing.F) {
	for _, s := range []string{"[]", "[0,1]", "[3]", "[1,", "[9999999999]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		got, err := parsePositions(list, 0, 5, nil)
		for _, p := range got {
			if p < 0 || p >= 5 {
				t.Fatalf("parsePositions(%q) = %v (%v): position out of range", list, got, err)
			}
		}
	})
}
