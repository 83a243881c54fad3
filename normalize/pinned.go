package normalize

import "unicode/utf8"

// How c stays NFC as of Unicode 15.0.0 under newer tables.
//
// Unicode's normalization stability policy guarantees that NFC of a string
// made only of characters assigned in version V is the same in every later
// version. What changes is the treatment of code points unassigned in V:
// V's normalizer gives them no decomposition, combining class 0 and no
// compositions, so each is a boundary that nothing crosses and that stays
// as it is; a later version may give them a decomposition, a non-zero
// combining class or compositions (Kirat Rai U+16D67 U+16D67 composes to
// U+16D68 since Unicode 16.0).
//
// So with newer tables, c(s) is computed by cutting s at every code point
// unassigned in 15.0.0 (the table in assigned.go), normalizing each piece
// between the cuts with NFC on the tables' decomposition (nfc.go; exact
// by the stability policy), and keeping the cut code points unchanged.
// With tables of exactly 15.0.0 (Go before 1.27, or golang.org/x/text
// before v0.34.0) NFC on the tables already is c, and this path is unused.
// docs/FORMAT.md gives the same procedure to readers in other languages.

// allAssigned reports whether every code point of valid UTF-8 s was
// assigned in PinnedUnicode.
func allAssigned(s string) bool {
	for _, r := range s {
		if r >= utf8.RuneSelf && !isAssigned(r) {
			return false
		}
	}
	return true
}

// appendPinned appends c(s) for valid UTF-8 s computed piecewise: NFC of
// each run of assigned code points, unassigned ones copied. Each run is
// normalized on its own (appendNFC never composes across the join with
// what dst already holds, which is exactly what must not happen at a
// cut).
func appendPinned(dst []byte, s string) []byte {
	start := 0
	for i, r := range s {
		if r < utf8.RuneSelf || isAssigned(r) {
			continue
		}
		dst = appendNFC(dst, s[start:i])
		dst = utf8.AppendRune(dst, r)
		start = i + utf8.RuneLen(r)
	}
	return appendNFC(dst, s[start:])
}

// AssignedRanges returns the code points assigned in PinnedUnicode, as
// sorted inclusive ranges: the data a reader with newer normalization
// tables needs to reproduce c (fixtures/v1 publishes it as text).
func AssignedRanges() [][2]rune {
	return append([][2]rune(nil), assigned[:]...)
}
