// Package keycorpus holds the Unicode key corpus shared by the tests of
// normalize and syncfilter and by cmd/fixturegen: groups of spellings that
// are canonically equivalent, so every spelling of a group must become the
// same canonical bytes and the same filter positions.
package keycorpus

import "strings"

// Group is a set of canonically equivalent spellings of one key. NFC is the
// expected canonical form, written out by hand (not computed), so that a
// change in the normalization tables is noticed.
type Group struct {
	Name      string
	NFC       string
	Spellings []string // every spelling, NFC included
}

// Groups returns the corpus. Each call builds fresh strings.
func Groups() []Group {
	longNFC := strings.Repeat("\u00e9", 32769)  // 65,538 bytes
	longNFD := strings.Repeat("e\u0301", 32769) // 98,307 bytes
	return []Group{
		{"empty", "", []string{""}},
		{"ascii id", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", []string{"3f2504e0-4f89-11d3-9a0c-0305e82c3301"}},
		{"nul inside", "a\x00b", []string{"a\x00b"}},
		{"nul alone", "\x00", []string{"\x00"}},
		{"e acute", "\u00e9", []string{"\u00e9", "e\u0301"}},
		{"latin two marks", "\u1ec7", []string{"\u1ec7", "e\u0323\u0302", "e\u0302\u0323", "\u00ea\u0323", "\u1eb9\u0302"}},
		{"vietnamese word", "Vi\u1ec7t Nam", []string{"Vi\u1ec7t Nam", "Vie\u0323\u0302t Nam", "Vie\u0302\u0323t Nam"}},
		{"marks reordered", "\u1ea1\u0301", []string{"\u1ea1\u0301", "a\u0301\u0323", "a\u0323\u0301"}},
		{"hangul syllables vs jamo", "\ud55c\uad6d\uc5b4", []string{"\ud55c\uad6d\uc5b4", "\u1112\u1161\u11ab\u1100\u116e\u11a8\u110b\u1165"}},
		{"hiragana dakuten", "\u304c\u304e", []string{"\u304c\u304e", "\u304b\u3099\u304d\u3099"}},
		{"katakana handakuten", "\u30d1\u30b9\u30ef\u30fc\u30c9", []string{"\u30d1\u30b9\u30ef\u30fc\u30c9", "\u30cf\u309a\u30b9\u30ef\u30fc\u30c8\u3099"}},
		{"angstrom sign", "\u00c5", []string{"\u00c5", "\u212b", "A\u030a"}},
		{"ohm sign", "\u03a9", []string{"\u03a9", "\u2126"}},
		{"kelvin sign", "K", []string{"K", "\u212a"}},
		{"greek tonos", "\u03ac", []string{"\u03ac", "\u1f71", "\u03b1\u0301"}},
		{"cjk compatibility ideograph", "\u8c48", []string{"\u8c48", "\uf900"}},
		{"composition exclusion", "\u0915\u093c", []string{"\u0915\u093c", "\u0958"}},
		{"chinese", "\u540c\u6b65\u8bb0\u5f55-\u4e2d\u6587", []string{"\u540c\u6b65\u8bb0\u5f55-\u4e2d\u6587"}},
		{"japanese", "\u30c7\u30fc\u30bf\u540c\u671f", []string{"\u30c7\u30fc\u30bf\u540c\u671f", "\u30c6\u3099\u30fc\u30bf\u540c\u671f"}},
		{"emoji zwj family", "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466", []string{"\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"}},
		{"emoji skin tone and flag", "\U0001f44d\U0001f3fd\U0001f1ef\U0001f1f5", []string{"\U0001f44d\U0001f3fd\U0001f1ef\U0001f1f5"}},
		{"emoji with accented text", "caf\u00e9 \u2615\ufe0f", []string{"caf\u00e9 \u2615\ufe0f", "cafe\u0301 \u2615\ufe0f"}},
		{"64 KiB key", longNFC, []string{longNFC, longNFD}},
		{"64 KiB ascii", strings.Repeat("k", 65536), []string{strings.Repeat("k", 65536)}},
	}
}
