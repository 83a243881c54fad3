package store

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Keys travel to and from SQLite as JSON arrays of strings: one parameter
// (json_each) for a page of keys to confirm, one value
// (json_group_array) for a chunk of keys read. This file writes and reads
// them.

// keyArray returns keys as a JSON array of strings, escaping what JSON
// requires ('"', '\\' and control characters); other bytes, valid UTF-8
// or not, are copied as they are, which json_each reads back byte for
// byte. The array is built in one allocation when no key needs an escape
// (a page's array is kilobytes, written with every statement that
// carries one).
func keyArray(keys []string) string {
	b := make([]byte, 0, keyArraySize(keys))
	b = append(b, '[')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		if plainJSON(k) {
			b = append(b, k...)
			b = append(b, '"')
			continue
		}
		start := 0
		for j := 0; j < len(k); j++ {
			c := k[j]
			if !jsonEscaped[c] {
				continue
			}
			b = append(b, k[start:j]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			}
			start = j + 1
		}
		b = append(b, k[start:]...)
		b = append(b, '"')
	}
	b = append(b, ']')
	// b is not written again: the string shares its bytes (as
	// strings.Builder does) instead of copying the array.
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// plainJSON reports whether k needs no escape in a JSON string, eight
// bytes at a time: a byte below 0x20, a '"' or a '\\' among them makes
// one of the three tests nonzero (each exact: no false alarm, no miss).
func plainJSON(k string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(k); i += 8 {
		x := uint64(k[i]) | uint64(k[i+1])<<8 | uint64(k[i+2])<<16 | uint64(k[i+3])<<24 |
			uint64(k[i+4])<<32 | uint64(k[i+5])<<40 | uint64(k[i+6])<<48 | uint64(k[i+7])<<56
		q, bs := x^('"'*ones), x^('\\'*ones)
		if ((x-0x20*ones)&^x|(q-ones)&^q|(bs-ones)&^bs)&highs != 0 {
			return false
		}
	}
	for ; i < len(k); i++ {
		if jsonEscaped[k[i]] {
			return false
		}
	}
	return true
}

// jsonEscaped says which bytes a JSON string escapes: '"', '\\' and the
// control characters.
var jsonEscaped = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// keyArraySize is the length of keys' JSON array when no key needs an
// escape (the least it can be).
func keyArraySize(keys []string) int {
	n := 2 + max(len(keys)-1, 0)
	for _, k := range keys {
		n += len(k) + 2
	}
	return n
}

const hexDigits = "0123456789abcdef"

// errKeyArray is a JSON array of keys this reader does not expect from
// SQLite.
var errKeyArray = errors.New("unexpected JSON from json_group_array")

// parseKeyArray appends the strings of a JSON array of strings, as
// SQLite's json_group_array writes them, to out. A string without escapes
// is a substring of list (no copy); bytes that are not valid UTF-8 are
// kept as they are, as SQLite writes them.
func parseKeyArray(list string, out []string) ([]string, error) {
	if len(list) < 2 || list[0] != '[' || list[len(list)-1] != ']' {
		return out, errKeyArray
	}
	body, first := list[1:len(list)-1], len(out) // out may hold earlier arrays' keys
	for i := 0; i < len(body); {
		if len(out) > first {
			if body[i] != ',' {
				return out, errKeyArray
			}
			i++
		}
		if i >= len(body) || body[i] != '"' {
			return out, errKeyArray
		}
		i++
		start, escaped := i, false
		for i < len(body) && body[i] != '"' {
			if body[i] == '\\' {
				escaped = true
				i++
			}
			i++
		}
		if i >= len(body) {
			return out, errKeyArray
		}
		s := body[start:i]
		i++ // the closing quote
		if escaped {
			var err error
			if s, err = unescape(s); err != nil {
				return out, err
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// parsePositions appends base+i for every position i of a JSON array of
// positions below n, as json_group_array writes them, to out.
func parsePositions(list string, base, n int, out []int) ([]int, error) {
	if len(list) < 2 || list[0] != '[' || list[len(list)-1] != ']' {
		return out, errKeyArray
	}
	body := list[1 : len(list)-1]
	for i := 0; i < len(body); {
		if i > 0 {
			if body[i] != ',' {
				return out, errKeyArray
			}
			i++
		}
		v, start := 0, i
		for i < len(body) && body[i] >= '0' && body[i] <= '9' && i-start < 10 {
			v = v*10 + int(body[i]-'0')
			i++
		}
		if i == start || i < len(body) && body[i] != ',' || v >= n {
			return out, errKeyArray
		}
		out = append(out, base+v)
	}
	return out, nil
}

// unescape decodes the escapes of a JSON string's contents.
func unescape(s string) (string, error) {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i++; i >= len(s) {
			return "", errKeyArray
		}
		switch s[i] {
		case '"', '\\', '/':
			b.WriteByte(s[i])
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := hex4(s, i+1)
			if !ok {
				return "", errKeyArray
			}
			i += 4
			if utf16.IsSurrogate(r) {
				lo, ok := hex4(s, i+3)
				if !ok || i+2 >= len(s) || s[i+1] != '\\' || s[i+2] != 'u' {
					return "", errKeyArray
				}
				if r = utf16.DecodeRune(r, lo); r == utf8.RuneError {
					return "", errKeyArray
				}
				i += 6
			}
			b.WriteRune(r)
		default:
			return "", errKeyArray
		}
	}
	return b.String(), nil
}

// hex4 reads four hex digits at s[i:].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	v, err := strconv.ParseUint(s[i:i+4], 16, 16)
	return rune(v), err == nil
}

// parseString reads one JSON string, as SQLite's json_quote writes a
// text value.
func parseString(s string) (string, error) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", errKeyArray
	}
	body := s[1 : len(s)-1]
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '\\':
			return unescape(body)
		case '"':
			return "", errKeyArray
		}
	}
	return body, nil
}
