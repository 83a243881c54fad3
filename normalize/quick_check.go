package normalize

import "unicode/utf8"

// quickCanonical reports, in one pass over s, whether s is valid UTF-8
// made only of ASCII and quick code points (quick.go): then c(s) = s.
// False means "look closer", not "not canonical": invalid bytes, code
// points that may compose, reorder or be unassigned in PinnedUnicode all
// go to the full path, which validates and normalizes.
//
// A leading run of ASCII goes eight bytes at a time; two-byte sequences
// (Latin, Greek, Cyrillic, Hebrew, Arabic letters) are decoded inline;
// longer ones by the utf8 package. It does not allocate.
func quickCanonical(s string) bool {
	const hi = 0x8080808080808080
	for len(s) >= 8 {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		if w&hi != 0 {
			break
		}
		s = s[8:]
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			continue
		}
		var r rune
		if c >= 0xC2 && c < 0xE0 && i+1 < len(s) && s[i+1]&0xC0 == 0x80 {
			r = rune(c&0x1F)<<6 | rune(s[i+1]&0x3F)
			i += 2
		} else {
			var size int
			r, size = utf8.DecodeRuneInString(s[i:])
			if size == 1 { // an invalid byte (U+FFFD itself takes three)
				return false
			}
			i += size
		}
		if !isQuick(r) {
			return false
		}
	}
	return true
}

// isQuick reports whether code point r (≥ U+0080) is in the quick table.
func isQuick(r rune) bool {
	return quickBlocks[quickIndex[r>>8]][r>>6&3]>>(r&63)&1 != 0
}
