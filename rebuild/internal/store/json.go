package store

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Keys travel to and from SQLite as JSON arrays of strings: one parameter
// (json_each) for a page of keys to confirm, one value
// (json_group_array) for a chunk of keys read. This file writes and reads
// them.

// appendKeyArray appends keys to b as a JSON array of strings, escaping
// what JSON requires ('"', '\\' and control characters); other bytes,
// valid UTF-8 or not, are copied as they are, which json_each reads back
// byte for byte.
func appendKeyArray(b []byte, keys []string) []byte {
	b = append(b, '[')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		start := 0
		for j := 0; j < len(k); j++ {
			c := k[j]
			if c >= 0x20 && c != '"' && c != '\\' {
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
	return append(b, ']')
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
