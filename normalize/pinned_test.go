package normalize_test

import (
	"encoding/hex"
	"os"
	"testing"
	"unicode/utf8"

	"github.com/zeebo/blake3"
	"golang.org/x/text/unicode/norm"

	"github.com/syncfilter/syncfilter/normalize"
)

// pinnedCorpusSum is the BLAKE3-256 of c(s) over pinnedCorpus, computed
// with Unicode 15.0.0 tables (Go 1.26, golang.org/x/text tables15.0.0).
// Every build, whatever its tables, must reproduce it: this is the proof
// that the piecewise procedure of pinned.go is exact under newer tables
// (make test runs this test with Go 1.27, whose tables are 17.0.0).
const pinnedCorpusSum = "9bf405565837acfd7f08f6890345b31b4b9d94e36940e7cc3f7d48548aa34070"

// pinnedCorpus calls each for every string of the corpus: every Unicode
// scalar value alone, before a combining acute (U+0301, class 230), before
// a combining tilde overlay (U+0334, class 1), after "a", after a Hangul
// leading jamo, and doubled: what decomposes, reorders or composes.
func pinnedCorpus(each func(s string)) {
	var buf [32]byte
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		for _, pair := range [][2]rune{{r, -1}, {r, 0x0301}, {r, 0x0334}, {'a', r}, {0x1100, r}, {r, r}} {
			b := utf8.AppendRune(buf[:0], pair[0])
			if pair[1] >= 0 {
				b = utf8.AppendRune(b, pair[1])
			}
			each(string(b))
		}
	}
}

func corpusSum(c func(string) string) string {
	h := blake3.New()
	var n [1]byte
	pinnedCorpus(func(s string) {
		out := c(s)
		n[0] = byte(len(out))
		_, _ = h.Write(n[:])
		_, _ = h.Write([]byte(out))
	})
	return hex.EncodeToString(h.Sum(nil))
}

// TestPinnedNFCIsExact: c over the corpus is Unicode 15.0.0's NFC, byte
// for byte, whatever tables this build has.
func TestPinnedNFCIsExact(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("6.7M strings")
	}
	got := corpusSum(func(s string) string {
		c, err := normalize.String(s)
		if err != nil {
			t.Fatalf("%+q: %v", s, err)
		}
		return c
	})
	raw := corpusSum(norm.NFC.String) // the tables' own NFC
	if os.Getenv("SYNCFILTER_PRINT_CORPUS") != "" {
		t.Logf("tables %s: c %s, raw NFC %s", normalize.TablesVersion(), got, raw)
	}
	if got != pinnedCorpusSum {
		t.Fatalf("tables %s: c over the corpus is %s, Unicode 15.0.0's NFC is %s", normalize.TablesVersion(), got, pinnedCorpusSum)
	}
	// The corpus tells the versions apart: newer tables' own NFC differs.
	// (With 15.0.0 tables, golang.org/x/text before v0.42.0 composes
	// wrongly, so its own NFC may differ too: c does not use it.)
	if normalize.TablesVersion() != normalize.PinnedUnicode && raw == pinnedCorpusSum {
		t.Fatalf("tables %s: raw NFC equal to 15.0.0's", normalize.TablesVersion())
	}
}

// TestPinnedKnownCases: keys whose NFC changed after Unicode 15.0.0 keep
// their 15.0.0 form.
func TestPinnedKnownCases(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"\U00016D67\U00016D67", "\U00016D67\U00016D67"},               // Kirat Rai AI: composes to U+16D68 since 16.0
		{"x\U00016D67\U00016D67\u00e9", "x\U00016D67\U00016D67\u00e9"}, // with assigned neighbours
		{"e\U00016D67\u0301", "e\U00016D67\u0301"},                     // the unassigned code point blocks composition
		{"e\u0301\U00016D67", "\u00e9\U00016D67"},                      // the assigned run before it is normalized
		{"\U000113C2\U000113C2", "\U000113C2\U000113C2"},               // Tulu-Tigalari (16.0)
		{"\U00016D68", "\U00016D68"},                                   // the new precomposed letter stays as it is
	} {
		got, err := normalize.String(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("String(%+q) = %+q, %v; want %+q", tc.in, got, err, tc.want)
		}
		if normalize.IsCanonical(tc.in) != (tc.in == tc.want) {
			t.Errorf("IsCanonical(%+q) = %v", tc.in, !(tc.in == tc.want))
		}
	}
}

// TestAppendIgnoresWhatPrecedes: Append normalizes the key on its own,
// never across the join with dst (a combining mark at the start of a key
// does not attach to the previous key's last letter).
func TestAppendIgnoresWhatPrecedes(t *testing.T) {
	for _, tc := range []struct{ dst, s string }{
		{"e", "\u0301x"},
		{"\u0915", "\u093c"},
		{"a\u0334", "\u0301"},
		{"\u1100", "\u1161"},
	} {
		got, err := normalize.Append([]byte(tc.dst), tc.s)
		c, _ := normalize.String(tc.s)
		if err != nil || string(got) != tc.dst+c {
			t.Errorf("Append(%+q, %+q) = %+q, want %+q", tc.dst, tc.s, got, tc.dst+c)
		}
	}
}
