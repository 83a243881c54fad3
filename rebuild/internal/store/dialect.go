package store

import (
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The statements that carry keys have two dialects. The JSON one (SQLite
// 3.45 and later) passes keys in as one JSON array (json_each) and reads
// them out as one (json_group_array, json_quote). The plain one, for an
// older SQLite built without the JSON functions (SQLCipher 4.4's 3.33.0),
// binds each key as a parameter of a VALUES list, of a size out of a few
// (plainSize: one statement per size, padded with NULLs, which no key
// equals), and reads a list out as the text group_concat joins, each
// value an 'x' and its bytes in hex (SQLite 3.33's group_concat ends its
// result at the first NUL). octet_length is length(CAST(x AS BLOB)). Both
// carry any bytes, a NUL or invalid UTF-8 included.

// plainMax is the most keys one plain statement binds (SQLite's limit on
// parameters is 32,766 from 3.32 on); plainSize rounds a count up to a
// power of two, so that a page of any size prepares few statements.
const plainMax = 1024

func plainSize(n int) int {
	size := 2
	for size < n {
		size *= 2
	}
	return size
}

// plainOf reports whether the statements run through q take the plain
// dialect: the driver's SQLite lacks the JSON ones (checkEngine).
func plainOf(q querier) bool {
	switch q := q.(type) {
	case *Conn:
		return q.db.plain
	case *Tx:
		return q.plain
	}
	panic(fmt.Sprintf("store: no dialect for %T", q))
}

// octets is the length in bytes of the text x.
func (s *Source) octets(x string) string {
	if s.plain {
		return `length(CAST(` + x + ` AS BLOB))`
	}
	return `octet_length(` + x + `)`
}

// keysFrom is the FROM item j over the keys, j.key each key's position,
// j.value the key: in the JSON array ?at, or plain in the size parameters
// from ?at on.
func (s *Source) keysFrom(at, size int) string {
	if !s.plain {
		return `json_each(?` + strconv.Itoa(at) + `) j`
	}
	b := make([]byte, 0, 16*size+64)
	b = append(b, `(SELECT column1 AS key, column2 AS value FROM (VALUES `...)
	for i := range size {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, '(')
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, ", ?"...)
		b = strconv.AppendInt(b, int64(at+i), 10)
		b = append(b, ')')
	}
	return string(append(b, `)) j`...))
}

// inPositions is the condition that position x is in the list p
// (appendSpelled's; plain, bound as a BLOB, which substr cuts by bytes
// and x'31' equals).
func (s *Source) inPositions(x, p string) string {
	if s.plain {
		return `substr(` + p + `, ` + x + ` + 1, 1) = x'31'`
	}
	return x + ` IN (SELECT value FROM json_each(` + p + `))`
}

// groupKeys is the aggregate that lists the texts x of the rows filter
// selects (parseKeys reads it).
func (s *Source) groupKeys(x, filter string) string {
	if s.plain {
		return `group_concat(` + item(x) + `, '') FILTER (WHERE ` + filter + `)`
	}
	return `json_group_array(` + x + `) FILTER (WHERE ` + filter + `)`
}

// item is the text x as one item of a plain list out (NULL if x is).
func item(x string) string { return `CASE WHEN ` + x + ` IS NOT NULL THEN 'x' || hex(` + x + `) END` }

// groupPositions is the aggregate that lists the integers x
// (parsePositions reads it).
func (s *Source) groupPositions(x string) string {
	if s.plain {
		return `group_concat(` + x + `)`
	}
	return `json_group_array(` + x + `)`
}

// quote is the text x as one value parseKey reads (NULL if x is).
func (s *Source) quote(x string) string {
	if s.plain {
		return `CAST(` + x + ` AS TEXT)`
	}
	return `json_quote(` + x + `)`
}

// keyArgs appends the parameters of keys for keysFrom(at, size): their
// JSON array, or plain each key and NULLs up to size.
func (s *Source) keyArgs(args []driver.NamedValue, keys []string, at, size int) []driver.NamedValue {
	if !s.plain {
		return append(args, arg(at, keyArray(keys)))
	}
	for i := range size {
		var v any
		if i < len(keys) {
			v = keys[i]
		}
		args = append(args, arg(at+i, v))
	}
	return args
}

// errKeyList is a plain list from SQLite this reader does not expect.
var errKeyList = errors.New("unexpected list from group_concat")

// parseKeys appends the keys of a list groupKeys made to out (NULL, nil
// here, is an empty plain list).
func (s *Source) parseKeys(v any, out []string) ([]string, error) {
	list := textValue(v)
	if !s.plain {
		return parseKeyArray(list, out)
	}
	for i := 0; i < len(list); {
		k, next, err := readItem(list, i)
		if err != nil {
			return out, err
		}
		out, i = append(out, k), next
	}
	return out, nil
}

// readItem reads the item of a plain list at list[i:], and returns the
// index after it.
func readItem(list string, i int) (string, int, error) {
	if list[i] != 'x' {
		return "", 0, errKeyList
	}
	end := strings.IndexByte(list[i+1:], 'x')
	if end < 0 {
		end = len(list)
	} else {
		end += i + 1
	}
	b, err := hex.DecodeString(list[i+1 : end])
	if err != nil {
		return "", 0, errKeyList
	}
	return string(b), end, nil
}

// parseKey reads one value quote made.
func (s *Source) parseKey(v any) (string, error) {
	if s.plain {
		return textValue(v), nil
	}
	return parseString(textValue(v))
}

// parsePositions appends base+i for every position i (below n) of a list
// groupPositions made to out.
func (s *Source) parsePositions(v any, base, n int, out []int) ([]int, error) {
	list := textValue(v)
	if !s.plain {
		return parsePositions(list, base, n, out)
	}
	return parseInts(list, base, n, out, errKeyList)
}

// compareVersions is the package's compareVersions for a list of either
// dialect (plain: only the keys with rows, in position order).
func (s *Source) compareVersions(v any, base int, vers []any, found, older []int) ([]int, []int, error) {
	list := textValue(v)
	if !s.plain {
		return compareVersions(list, base, vers, found, older)
	}
	prev := -1
	for i := 0; i < len(list); {
		str, next, err := readItem(list, i)
		if err != nil {
			return found, older, err
		}
		i = next
		pos, fresh, err := versionEntry(str, vers, prev)
		if err != nil {
			return found, older, err
		}
		prev = pos
		found = append(found, base+pos)
		if !fresh {
			older = append(older, base+pos)
		}
	}
	return found, older, nil
}
