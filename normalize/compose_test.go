package normalize

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// TestCompositionCases: keys golang.org/x/text before v0.42.0 composed
// wrongly, and their neighbours that must still compose. c is computed
// here (nfc.go), so these hold with any golang.org/x/text of go.mod's
// range.
func TestCompositionCases(t *testing.T) {
	for _, tc := range []struct{ why, in, want string }{
		// Pairs beyond the BMP are told from BMP pairs (x/text clipped
		// each code point of the pair to 16 bits).
		{"U+10041 is not A", "\U00010041\u0301", "\U00010041\u0301"},
		{"U+10065 is not e", "\U00010065\u0301", "\U00010065\u0301"},
		{"U+1D41 (BMP) is not A", "\u1d41\u0301", "\u1d41\u0301"},
		{"a pair beyond the BMP composes", "\U00011099\U000110ba", "\U0001109a"},
		{"and after a BMP letter", "a\U00011099\U000110ba", "a\U0001109a"},
		{"Kaithi, Chakma, Grantha", "\U000110a5\U000110ba\U00011131\U00011127\U00011347\U0001133e", "\U000110ab\U0001112e\U0001134b"},
		// A starter blocks a later mark from the starter before it, even
		// one that composes with nothing before it and a mark between
		// that composes with nothing (x/text did not move its last
		// starter to such a starter).
		{"Sinhala aela-pilla blocks", "i\u0dcf\u0316\u0300", "i\u0dcf\u0316\u0300"},
		{"Oriya AA blocks", "i\u0b3e\u0316\u0300", "i\u0b3e\u0316\u0300"},
		{"Hangul V blocks", "e\u1161\u0316\u0301", "e\u1161\u0316\u0301"},
		{"without it the mark composes", "i\u0316\u0300", "\u00ec\u0316"},
		{"and with it the starters compose", "\u0dd9\u0dcf\u0316\u0300", "\u0ddc\u0316\u0300"},
		// Hangul: algorithmic compositions, and compositions after a
		// syllable in the same key (x/text stopped composing after a
		// syllable in one segment; with Unicode 15.0.0 no backward-
		// combining starter also starts a pair, so c never showed it,
		// but the path is tried).
		{"L V", "\u1100\u1161", "\uac00"},
		{"L V T", "\u1100\u1161\u11a8", "\uac01"},
		{"LV T", "\uac00\u11a8", "\uac01"},
		{"LVT T does not compose", "\uac01\u11a8", "\uac01\u11a8"},
		{"L T does not compose", "\u1100\u11a8", "\u1100\u11a8"},
		{"V after a mark is blocked", "\u1100\u0301\u1161", "\u1100\u0301\u1161"},
		{"then Latin composes", "\uac00e\u0301\u1100\u1161\u0323\u0301o\u0308", "\uac00\u00e9\uac00\u0323\u0301\u00f6"},
		{"Sinhala after a syllable", "\uac00\u0dd9\u0dcf\u0dca", "\uac00\u0ddd"},
		// Canonical order and blocking by class.
		{"dot below before acute", "e\u0301\u0323", "\u1eb9\u0301"},
		{"equal classes block", "a\u0308\u0301", "\u00e4\u0301"},
		{"a lower class between", "a\u0316\u0301", "\u00e1\u0316"},
		{"excluded composites stay decomposed", "\u0915\u093c", "\u0915\u093c"},
		{"singletons decompose", "\u212b\u2126", "\u00c5\u03a9"},
		{"a leading mark composes with nothing", "\u0301e", "\u0301e"},
	} {
		got, err := String(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%s: String(%+q) = %+q, %v; want %+q", tc.why, tc.in, got, err, tc.want)
		}
		if IsCanonical(tc.in) != (tc.in == tc.want) {
			t.Errorf("%s: IsCanonical(%+q) = %v", tc.why, tc.in, tc.in != tc.want)
		}
		if nfd := norm.NFD.String(got); nfd != norm.NFD.String(tc.in) {
			t.Errorf("%s: String(%+q) = %+q is not canonically equivalent", tc.why, tc.in, got)
		}
	}
}

// TestCompositionTableAgreesWithDecomposition: every pair of the table
// decomposes (golang.org/x/text's NFD) as its composite does, and the
// composite is assigned in the pinned version.
func TestCompositionTableAgreesWithDecomposition(t *testing.T) {
	for i, c := range compositions {
		a, b := rune(c.pair>>21), rune(c.pair&(1<<21-1))
		if i > 0 && compositions[i-1].pair >= c.pair {
			t.Fatalf("table not sorted at U+%04X U+%04X", a, b)
		}
		if !isAssigned(c.r) || !isAssigned(a) || !isAssigned(b) {
			t.Fatalf("U+%04X U+%04X -> U+%04X: unassigned in %s", a, b, c.r, PinnedUnicode)
		}
		if got, want := norm.NFD.String(string(c.r)), norm.NFD.String(string([]rune{a, b})); got != want {
			t.Fatalf("U+%04X U+%04X -> U+%04X: NFD %+q, the pair's %+q", a, b, c.r, got, want)
		}
		if compose(a, b) != c.r {
			t.Fatalf("compose(U+%04X, U+%04X) = U+%04X", a, b, compose(a, b))
		}
	}
	if len(compositions) < 900 {
		t.Fatalf("%d compositions", len(compositions))
	}
}

// referenceNFD is the full canonical decomposition of s in canonical
// order, as the standard states it: each code point decomposed on its
// own (golang.org/x/text's tables, Hangul arithmetically), then adjacent
// non-starters exchanged while a class is followed by a lower one.
// golang.org/x/text's NFD is not used: it inserts U+034F after 30
// non-starters (the Stream-Safe Text Format), which NFC does not.
func referenceNFD(s string) []rune {
	var d []rune
	for _, r := range s {
		if x := r - hangulSBase; x >= 0 && x < hangulSCount {
			d = append(d, hangulLBase+x/(hangulVCount*hangulTCount), hangulVBase+x%(hangulVCount*hangulTCount)/hangulTCount)
			if x%hangulTCount != 0 {
				d = append(d, hangulTBase+x%hangulTCount)
			}
			continue
		}
		if m := norm.NFD.PropertiesString(string(r)).Decomposition(); len(m) > 0 {
			d = append(d, []rune(string(m))...)
			continue
		}
		d = append(d, r)
	}
	for swapped := true; swapped; {
		swapped = false
		for i := 1; i < len(d); i++ {
			if a, b := referenceCCC(d[i-1]), referenceCCC(d[i]); b > 0 && a > b {
				d[i-1], d[i] = d[i], d[i-1]
				swapped = true
			}
		}
	}
	return d
}

func referenceCCC(r rune) uint8 { return norm.NFD.PropertiesString(string(r)).CCC() }

// referenceNFC is UAX #15's canonical composition as the standard states
// it, quadratic and without shortcuts, on referenceNFD: for each code
// point, every starter before it is tried, the last one only, unblocked.
func referenceNFC(s string) string {
	d := referenceNFD(s)
	ccc := referenceCCC
	removed := make([]bool, len(d))
	for i := 1; i < len(d); i++ {
		// The last starter before d[i] still there.
		l := -1
		for j := i - 1; j >= 0; j-- {
			if !removed[j] && ccc(d[j]) == 0 {
				l = j
				break
			}
		}
		if l < 0 {
			continue
		}
		blocked := false
		for j := l + 1; j < i; j++ {
			if !removed[j] && (ccc(d[j]) == 0 || ccc(d[j]) >= ccc(d[i])) {
				blocked = true
			}
		}
		if blocked {
			continue
		}
		if x := compose(d[l], d[i]); x >= 0 {
			d[l], removed[i] = x, true
		}
	}
	var sb strings.Builder
	for i, r := range d {
		if !removed[i] {
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// TestComposerMatchesReference: the one-pass composer gives what the
// standard's wording gives, on random keys of starters, marks of every
// class, Hangul jamo and syllables, and code points of every plane.
func TestComposerMatchesReference(t *testing.T) {
	marks := []rune{0x0300, 0x0301, 0x0302, 0x0303, 0x0308, 0x030a, 0x0316, 0x031b, 0x0323, 0x0327, 0x0334, 0x0345, 0x05b0, 0x093c, 0x0dca, 0x0dcf, 0x0f71, 0x0f72, 0x0f74, 0x0f80, 0x102e, 0x1161, 0x1175, 0x11a8, 0x11c2, 0x1b35, 0x3099, 0x309a, 0x110ba, 0x11127, 0x1133e}
	bases := []rune{'a', 'e', 'i', 'o', 'u', 'A', 'E', 'O', 0x00c5, 0x00e9, 0x212b, 0x1100, 0x1112, 0xac00, 0xac01, 0xd7a3, 0x0915, 0x0928, 0x0b47, 0x0dd9, 0x0ddc, 0x1025, 0x1b05, 0x304b, 0x30cf, 0x11099, 0x11131, 0x11347, 0x10041, 0x1e63, 0x01b0, 0x03b1, 0x1f00}
	rng := rand.New(rand.NewPCG(11, 12))
	var sb strings.Builder
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	for trial := 0; trial < n; trial++ {
		sb.Reset()
		for k := rng.IntN(10); k > 0; k-- {
			switch rng.IntN(6) {
			case 0, 1:
				sb.WriteRune(bases[rng.IntN(len(bases))])
			case 2:
				if r := rune(rng.IntN(0x32000)); utf8.ValidRune(r) && isAssigned(r) {
					sb.WriteRune(r)
				}
			default:
				sb.WriteRune(marks[rng.IntN(len(marks))])
			}
		}
		s := sb.String()
		got, err := String(s)
		if want := referenceNFC(s); err != nil || got != want {
			t.Fatalf("String(%+q) = %+q, %v; the standard's composition gives %+q", s, got, err, want)
		}
	}
}
