package normalize

import (
	"sort"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Policy identifies the canonicalization rules: NFC as of Unicode
// PinnedUnicode, UTF-8, nothing else. It is recorded in persisted filters
// and must change whenever c(s) could change for any valid s.
const Policy = "nfc/1"

// PinnedUnicode is the Unicode version whose NFC defines c under Policy:
// newer normalization tables reproduce it exactly (see pinned.go).
const PinnedUnicode = "15.0.0"

// UnicodeVersion returns the Unicode version that defines c: always
// PinnedUnicode, whatever tables this program was built with (see
// TablesVersion). Persisted filters record it.
func UnicodeVersion() string { return PinnedUnicode }

// TablesVersion returns the version of the normalization tables compiled
// into this program (golang.org/x/text/unicode/norm.Version, chosen by the
// Go version it is built with).
func TablesVersion() string { return norm.Version }

// samePin reports whether the tables are the pinned version, so that NFC
// on them (nfc.go) is c for every string.
var samePin = norm.Version == PinnedUnicode

// String returns c(s). It returns s itself, without allocating, when s is
// already canonical.
func String(s string) (string, error) {
	if quickCanonical(s) {
		return s, nil
	}
	return full(s)
}

// full is String without the one-pass check: validation, the pinned
// path under newer tables, the NFC check, normalization.
func full(s string) (string, error) {
	if err := validate(s); err != nil {
		return "", err
	}
	if !samePin && !allAssigned(s) {
		return string(appendPinned(nil, s)), nil
	}
	return nfc(s), nil
}

// Append appends c(s) to dst and returns the extended buffer. What dst
// already holds does not affect c(s): the key is normalized on its own,
// not joined with the bytes before it.
func Append(dst []byte, s string) ([]byte, error) {
	if quickCanonical(s) {
		return append(dst, s...), nil
	}
	if err := validate(s); err != nil {
		return dst, err
	}
	if !samePin && !allAssigned(s) {
		return appendPinned(dst, s), nil
	}
	return appendNFC(dst, s), nil
}

// IsCanonical reports whether s is valid UTF-8 and equal to c(s).
func IsCanonical(s string) bool {
	if quickCanonical(s) {
		return true
	}
	if !utf8.ValidString(s) {
		return false
	}
	if !samePin && !allAssigned(s) {
		return string(appendPinned(nil, s)) == s
	}
	return nfc(s) == s
}

// validate returns an *InvalidUTF8Error for the first invalid byte of s.
func validate(s string) error {
	if utf8.ValidString(s) {
		return nil
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			return &InvalidUTF8Error{Offset: i}
		}
		i += size
	}
	return nil // unreachable: ValidString said otherwise
}

// isAssigned reports whether r was assigned in PinnedUnicode.
func isAssigned(r rune) bool {
	i := sort.Search(len(assigned), func(i int) bool { return assigned[i][1] >= r })
	return i < len(assigned) && assigned[i][0] <= r
}
