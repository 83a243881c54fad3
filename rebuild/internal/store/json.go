package store

import (
	"cmp"
	"errors"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// In the JSON dialect (dialect.go) keys travel to and from SQLite as JSON
// arrays of strings: one parameter (json_each) for the keys to confirm,
// one value (json_group_array) per chunk of keys read. Bytes that are not
// valid UTF-8 are copied as they are both ways, as SQLite does.

// keyArray returns keys as a JSON array, escaping '"', '\\' and control
// characters, in one allocation when no key needs an escape.
func keyArray(keys []string) string {
	b := make([]byte, 0, keyArraySize(keys))
	b = append(b, '[')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		start, plain := 0, plainJSON(k)
		for j := 0; j < len(k) && !plain; j++ {
			if c := k[j]; jsonEscaped[c] {
				b = append(b, k[start:j]...)
				if c == '"' || c == '\\' {
					b = append(b, '\\', c)
				} else {
					b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
				}
				start = j + 1
			}
		}
		b = append(b, k[start:]...)
		b = append(b, '"')
	}
	b = append(b, ']')
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is not written again
}

// plainJSON reports whether k needs no escape, eight bytes at a time: a
// byte below 0x20, a '"' or a '\\' makes one of the three tests nonzero
// (each exact: no false alarm, no miss).
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

// jsonEscaped: '"', '\\' and the control characters.
var jsonEscaped = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

const hexDigits = "0123456789abcdef"

// keyArraySize is the length of keys' array without escapes.
func keyArraySize(keys []string) int {
	n := 2 + max(len(keys)-1, 0)
	for _, k := range keys {
		n += len(k) + 2
	}
	return n
}

// errKeyArray is JSON from SQLite this reader does not expect.
var errKeyArray = errors.New("unexpected JSON from json_group_array")

// parseKeyArray appends the strings of a JSON array to out; a string
// without escapes is a substring of list (no copy).
func parseKeyArray(list string, out []string) ([]string, error) {
	if len(list) < 2 || list[0] != '[' || list[len(list)-1] != ']' {
		return out, errKeyArray
	}
	body, first := list[1:len(list)-1], len(out)
	for i := 0; i < len(body); {
		if len(out) > first {
			if body[i] != ',' {
				return out, errKeyArray
			}
			i++
		}
		s, next, err := readString(body, i)
		if err != nil {
			return out, err
		}
		out, i = append(out, s), next
	}
	return out, nil
}

// parseString reads one JSON string, as json_quote writes a text value.
func parseString(s string) (string, error) {
	k, end, err := readString(s, 0)
	if err == nil && end != len(s) {
		err = errKeyArray
	}
	return k, err
}

// readString reads the JSON string at body[i:], and returns the index
// after it.
func readString(body string, i int) (_ string, next int, err error) {
	if i >= len(body) || body[i] != '"' {
		return "", 0, errKeyArray
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
		return "", 0, errKeyArray
	}
	s := body[start:i]
	if escaped {
		s, err = unescape(s)
	}
	return s, i + 1, err
}

// parsePositions appends base+i for every position i (below n) of a JSON
// array of integers to out.
func parsePositions(list string, base, n int, out []int) ([]int, error) {
	if len(list) < 2 || list[0] != '[' || list[len(list)-1] != ']' {
		return out, errKeyArray
	}
	return parseInts(list[1:len(list)-1], base, n, out, errKeyArray)
}

// parseInts appends base+i for every integer i (below n) of the
// comma-separated body to out; bad is the error for anything else.
func parseInts(body string, base, n int, out []int, bad error) ([]int, error) {
	for i := 0; i < len(body); {
		if i > 0 {
			if body[i] != ',' {
				return out, bad
			}
			i++
		}
		v, start := 0, i
		for i < len(body) && body[i] >= '0' && body[i] <= '9' && i-start < 10 {
			v = v*10 + int(body[i]-'0')
			i++
		}
		if i == start || i < len(body) && body[i] != ',' || v >= n {
			return out, bad
		}
		out = append(out, base+v)
	}
	return out, nil
}

// compareVersions reads the array versionsSQL returns for keys asked at
// vers (an int64 or a string each) and appends base + the position of
// every key the source holds to found, and to older too unless a stored
// version of the given one's type is at least it (integers as numbers,
// texts byte by byte, as SQLite's BINARY compares them). A version of
// another type never counts: the column retyped under the call, or a
// value the app stored of another type, is answered older (fetched again,
// never skipped). A value whose position is not its place is an error.
func compareVersions(list string, base int, vers []any, found, older []int) ([]int, []int, error) {
	if len(list) < 2 || list[0] != '[' || list[len(list)-1] != ']' {
		return found, older, errKeyArray
	}
	body := list[1 : len(list)-1]
	i := 0
	for pos := range vers {
		if pos > 0 {
			if i >= len(body) || body[i] != ',' {
				return found, older, errKeyArray
			}
			i++
		}
		if strings.HasPrefix(body[i:], "null") {
			i += 4
			continue // no row with the key
		}
		str, next, err := readString(body, i)
		if err != nil {
			return found, older, err
		}
		i = next
		at, fresh, err := versionEntry(str, vers, pos-1)
		if err != nil || at != pos {
			return found, older, cmp.Or(err, errKeyArray)
		}
		found = append(found, base+pos)
		if !fresh {
			older = append(older, base+pos)
		}
	}
	if i != len(body) {
		return found, older, errKeyArray
	}
	return found, older, nil
}

// versionEntry reads one value of versionsSQL: the key's position (after
// prev, below len(vers)) and whether its rows hold a version at least the
// one asked (vers[pos]).
func versionEntry(str string, vers []any, prev int) (pos int, fresh bool, err error) {
	digits := 0
	for digits < len(str) && str[digits] >= '0' && str[digits] <= '9' {
		digits++
	}
	pos, err = strconv.Atoi(str[:digits])
	if err != nil || pos <= prev || pos >= len(vers) || digits == len(str) {
		return 0, false, errKeyArray
	}
	switch tag, stored := str[digits], str[digits+1:]; {
	case tag == 't':
		given, isText := vers[pos].(string)
		fresh = isText && stored >= given
	case tag == 'i':
		n, err := strconv.ParseInt(stored, 10, 64)
		if err != nil {
			return 0, false, errKeyArray
		}
		given, isInt := vers[pos].(int64)
		fresh = isInt && n >= given
	case tag != 'o' || stored != "":
		return 0, false, errKeyArray
	}
	return pos, fresh, nil
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
				if !ok || s[i+1] != '\\' || s[i+2] != 'u' {
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
