package normalize

import (
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Policy identifies the canonicalization rules: NFC, UTF-8, nothing else.
// It is recorded in persisted filters and must change whenever c(s) could
// change for any valid s.
const Policy = "nfc/1"

// UnicodeVersion returns the version of the Unicode normalization tables
// compiled into this program (golang.org/x/text/unicode/norm.Version).
func UnicodeVersion() string { return norm.Version }

// String returns c(s). It returns s itself, without allocating, when s is
// already canonical.
func String(s string) (string, error) {
	if isASCII(s) {
		return s, nil
	}
	if err := validate(s); err != nil {
		return "", err
	}
	if isNFC(s) {
		return s, nil
	}
	return norm.NFC.String(s), nil
}

// Append appends c(s) to dst and returns the extended buffer.
func Append(dst []byte, s string) ([]byte, error) {
	if isASCII(s) {
		return append(dst, s...), nil
	}
	if err := validate(s); err != nil {
		return dst, err
	}
	return norm.NFC.AppendString(dst, s), nil
}

// IsCanonical reports whether s is valid UTF-8 and equal to c(s).
func IsCanonical(s string) bool {
	return isASCII(s) || (utf8.ValidString(s) && isNFC(s))
}

// isNFC reports whether valid UTF-8 s is in NFC. The quick-check span
// answers most keys without allocating; the full check handles the rest
// (combining marks that happen to be in canonical order, for instance).
func isNFC(s string) bool {
	return norm.NFC.QuickSpanString(s) == len(s) || norm.NFC.IsNormalString(s)
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

// isASCII reports whether every byte of s is below 0x80, eight at a time.
func isASCII(s string) bool {
	const hi = 0x8080808080808080
	for len(s) >= 8 {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		if w&hi != 0 {
			return false
		}
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
