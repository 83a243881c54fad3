package store

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// TestParsePositions: positions SQLite names are taken only when they are
// a JSON array of integers below the number of keys asked; anything else
// is an error, never a panic or a position out of range.
func TestParsePositions(t *testing.T) {
	t.Parallel()
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

// TestPlainJSONEveryByteEveryPlace: plainJSON, which tests eight bytes
// at a time, says a key needs an escape exactly when one of its bytes
// does: every byte value at every place of keys as long as two words and
// a tail, among bytes that are plain (low and high ones, which the word
// arithmetic borrows from and around).
func TestPlainJSONEveryByteEveryPlace(t *testing.T) {
	t.Parallel()
	for _, fill := range []byte{'a', ' ', 0x7f, 0x80, 0xff, '#', '[', ']'} {
		for n := 1; n <= 19; n++ {
			for at := range n {
				for c := range 256 {
					k := []byte(strings.Repeat(string(fill), n))
					k[at] = byte(c)
					want := !jsonEscaped[c]
					if got := plainJSON(string(k)); got != want {
						t.Fatalf("plainJSON(%q) = %v, want %v", k, got, want)
					}
				}
			}
		}
	}
	if !plainJSON("") {
		t.Fatal(`plainJSON("") = false`)
	}
}

// FuzzKeyArrayRoundTrip: whatever bytes a key holds, the JSON array SQLite
// writes for it (json_group_array over a text value) reads back as exactly
// those bytes, and the array the library writes (keyArray) reaches
// SQLite's json_each as exactly those bytes.
func FuzzKeyArrayRoundTrip(f *testing.F) {
	for _, s := range []string{"", "plain", "a\x00b", `q"b\s/`, "\x01\x1f\x7f", "\u2028", "\xff\xfe", "\xed\xa0\x80", "😀",
		"0123456789abcdef\"", "01234567\\9abcdef", "\xff\xff\xff\xff\xff\xff\xff\x1f"} {
		f.Add(s, "second")
	}
	db, err := testdriver.Open(filepath.Join(f.TempDir(), "fuzz.db"), testdriver.App{})
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	skipBelow(f, "3.45.0") // the JSON dialect's SQLite
	f.Fuzz(func(t *testing.T, a, b string) {
		var list string
		if err := db.QueryRow(`SELECT json_group_array(v) FROM (SELECT CAST(?1 AS TEXT) AS v UNION ALL SELECT CAST(?2 AS TEXT))`, a, b).Scan(&list); err != nil {
			t.Fatal(err)
		}
		got, err := parseKeyArray(list, nil)
		if err != nil {
			t.Fatalf("parse %q: %v", list, err)
		}
		if len(got) != 2 || got[0] != a || got[1] != b {
			t.Fatalf("%+q, %+q came back as %+q (from %q)", a, b, got, list)
		}
		sent := keyArray([]string{a, b})
		var first, second []byte
		if err := db.QueryRow(`SELECT CAST((SELECT value FROM json_each(?1) WHERE key = 0) AS BLOB), CAST((SELECT value FROM json_each(?1) WHERE key = 1) AS BLOB)`, sent).Scan(&first, &second); err != nil {
			t.Fatalf("json_each(%q): %v", sent, err)
		}
		if string(first) != a || string(second) != b {
			t.Fatalf("%+q, %+q reached SQLite as %+q, %+q (sent %q)", a, b, first, second, sent)
		}
	})
}
