package normalize

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// quickRunes lists every quick code point, from the committed table.
func quickRunes() []rune {
	var out []rune
	for r := rune(0x80); r <= utf8.MaxRune; r++ {
		if (r < 0xD800 || r > 0xDFFF) && isQuick(r) {
			out = append(out, r)
		}
	}
	return out
}

// TestQuickStringsAreCanonical: strings made of ASCII and quick code points
// are their own canonical form by the full path (validation, the pinned
// path under newer tables, the NFC check and normalization), so the
// one-pass answer is right. Every quick code point appears, alone and
// next to others, including next to the ASCII letters that could compose
// with a following combining mark.
func TestQuickStringsAreCanonical(t *testing.T) {
	quick := quickRunes()
	if len(quick) < 100_000 {
		t.Fatalf("only %d quick code points", len(quick))
	}
	check := func(s string) {
		t.Helper()
		if !quickCanonical(s) {
			t.Fatalf("quickCanonical(%+q) = false", s)
		}
		got, err := full(s)
		if err != nil || got != s {
			t.Fatalf("full(%+q) = %+q, %v: a quick string is not canonical", s, got, err)
		}
	}
	var sb strings.Builder
	for i, r := range quick {
		check(string(r))
		sb.WriteRune(r)
		sb.WriteByte("aeouAEOU"[i%8])
		if sb.Len() > 200 {
			check(sb.String())
			sb.Reset()
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 20_000; trial++ {
		sb.Reset()
		for n := rng.IntN(24); n > 0; n-- {
			if rng.IntN(3) == 0 {
				sb.WriteByte(byte(rng.IntN(0x80)))
			} else {
				sb.WriteRune(quick[rng.IntN(len(quick))])
			}
		}
		check(sb.String())
	}
}

// TestQuickExcludes spells out code points the one-pass check must leave
// to the full path, each for its reason.
func TestQuickExcludes(t *testing.T) {
	for _, tc := range []struct {
		r    rune
		why  string
		want bool
	}{
		{0x00C5, "Å: precomposed, quick check Yes", true},
		{0x0141, "Ł", true},
		{0xAC00, "Hangul LV syllable", true},
		{0x4E2D, "CJK ideograph", true},
		{0x1F600, "emoji", true},
		{0xFFFD, "replacement character", true},
		{0x0301, "combining acute: class 230, composes backwards", false},
		{0x0345, "combining ypogegrammeni: class 240", false},
		{0x212B, "Angstrom sign: decomposes to U+00C5, quick check No", false},
		{0x0F73, "Tibetan vowel II: decomposition starts with a non-starter", false},
		{0x11A8, "Hangul T jamo: composes with an LV syllable", false},
		{0x1161, "Hangul V jamo: composes with an L jamo", false},
		{0x0E33, "Thai sara am: compatibility-only", true},
		{0x0378, "unassigned in 15.0.0", false},
		{0x16D67, "Kirat Rai vowel: unassigned in 15.0.0, composes since 16.0", false},
		{0xE000, "private use: assigned, inert", true},
	} {
		if got := isQuick(tc.r); got != tc.want {
			t.Errorf("isQuick(U+%04X) = %v, want %v (%s)", tc.r, got, tc.want, tc.why)
		}
	}
}

// TestQuickAgreesWithFullPath: on random strings mixing ASCII, quick and
// non-quick code points and invalid bytes, String (one pass first) gives
// exactly what the full path gives, error offsets included.
func TestQuickAgreesWithFullPath(t *testing.T) {
	quick := quickRunes()
	other := []string{"\u0301", "\u0308", "\u212b", "\u1161", "\u11a8", "\u0378", "\U00016d67", "\xff", "\xed\xa0\x80", "\xc3", "e\u0301", "\u1100"}
	rng := rand.New(rand.NewPCG(7, 8))
	var sb strings.Builder
	for trial := 0; trial < 50_000; trial++ {
		sb.Reset()
		for n := rng.IntN(12); n > 0; n-- {
			switch rng.IntN(4) {
			case 0:
				sb.WriteByte(byte(rng.IntN(0x80)))
			case 1:
				sb.WriteString(other[rng.IntN(len(other))])
			default:
				sb.WriteRune(quick[rng.IntN(len(quick))])
			}
		}
		s := sb.String()
		got, gerr := String(s)
		want, werr := full(s)
		if got != want || (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
			t.Fatalf("String(%+q) = %+q, %v; full path %+q, %v", s, got, gerr, want, werr)
		}
		if IsCanonical(s) != (werr == nil && want == s) {
			t.Fatalf("IsCanonical(%+q) = %v", s, IsCanonical(s))
		}
	}
}

// TestCanonicalKeysDoNotAllocate: String returns a canonical key itself,
// for every shape the filters are measured with.
func TestCanonicalKeysDoNotAllocate(t *testing.T) {
	for _, s := range []string{
		"3f2504e0-4f89-11d3-9a0c-0305e82c3301", "730432150", "Ångström/Łódź-123",
		"Москва-7", "東京/大阪", "Dvořák 😀", "",
	} {
		var got string
		if n := testing.AllocsPerRun(100, func() { got, _ = String(s) }); n != 0 || got != s {
			t.Errorf("String(%q): %v allocations, %q", s, n, got)
		}
	}
}
