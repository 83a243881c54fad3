package rebuild

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mattn/go-sqlite3"
)

// scanChunk is how many keys one statement of a chunked scan returns (a
// variable for the tests), and noChunkedScan turns chunked scans off (for
// the tests that compare both ways).
var (
	scanChunk     = 4096
	noChunkedScan = false
	chunkBytes    = 4 << 20 // the longest chunk SQLite may build (SQLITE_LIMIT_LENGTH while paging)
)

// testHookChunk, if set, hears "fewer" when a chunk is asked again with
// fewer keys and "rest" when the scan goes on row by row.
var testHookChunk func(event string)

// sqliteLimitLength is SQLITE_LIMIT_LENGTH, the longest string or BLOB a
// connection builds or reads.
const sqliteLimitLength = 0

// limiter is the driver connection's sqlite3_limit.
type limiter interface{ SetLimit(id, newVal int) int }

// scanChunked reads the source's keys through its index, scanChunk keys
// per statement, each chunk one row holding the keys as a JSON array
// (json_group_array): one driver call and one string per chunk instead of
// per row, which is most of what reading a key through the driver costs
// beyond SQLite's own stepping.
//
// Paging is by key: the next chunk starts at the largest key of the last
// one (c >= last), skipping (OFFSET) the rows equal to it that were
// already read, so duplicate keys are all read, exactly once. Text keys
// sort between every number and every BLOB, which the range c >= ” AND
// c < x” keeps out; NULL and BLOB ids are counted through the index, and
// numbers (which TEXT affinity makes impossible) are read row by row.
//
// Memory stays bounded whatever the keys' lengths: while paging, the
// connection refuses to build a string over chunkBytes; a chunk that would
// is asked again with fewer keys, and a single key over it sends the rest
// of the scan row by row (in the same order, from the same place).
//
// It reports ok = false, having read nothing, when SQLite would not walk
// the index for the paging statement (the caller then reads row by row).
// Keys are handed to row in the index's order. The caller holds the read
// transaction on dc.
func (s *store) scanChunked(ctx context.Context, dc any, row func(string) error) (ok bool, nulls, blobs int64, err error) {
	prep, ok1 := dc.(driver.ConnPrepareContext)
	lim, ok2 := dc.(limiter)
	page := chunkPage(s)
	if !ok1 || !ok2 || !walksIndex(ctx, prep, page) {
		return false, 0, 0, nil
	}
	one := func(q string) (int64, error) {
		vals, err := driverFirst(ctx, prep, q, 1)
		if err != nil {
			return 0, err
		}
		n, _ := vals[0].(int64)
		return n, nil
	}
	if nulls, err = one(`SELECT count(*) FROM ` + s.qTable + ` WHERE ` + s.qCol + ` IS NULL`); err != nil {
		return true, 0, 0, err
	}
	if blobs, err = one(`SELECT count(*) FROM ` + s.qTable + ` WHERE ` + s.qCol + ` >= x''`); err != nil {
		return true, 0, 0, err
	}
	if err := readKeys(ctx, prep, `SELECT `+s.qCol+` FROM `+s.qTable+` WHERE `+s.qCol+` < ''`, row); err != nil {
		return true, 0, 0, err
	}
	st, err := prep.PrepareContext(ctx, page)
	if err != nil {
		return true, 0, 0, err
	}
	defer st.Close()
	old := lim.SetLimit(sqliteLimitLength, chunkBytes)
	defer lim.SetLimit(sqliteLimitLength, old)
	var (
		last    = ""
		skip    int64 // rows equal to last already read
		limit   = scanChunk
		keys    []string
		vals    = make([]driver.Value, 2)
		argsBuf [3]driver.NamedValue
	)
	for {
		if err := ctx.Err(); err != nil {
			return true, 0, 0, context.Cause(ctx)
		}
		argsBuf[0] = driver.NamedValue{Ordinal: 1, Value: last}
		argsBuf[1] = driver.NamedValue{Ordinal: 2, Value: skip}
		argsBuf[2] = driver.NamedValue{Ordinal: 3, Value: int64(limit)}
		rows, err := st.(driver.StmtQueryContext).QueryContext(context.Background(), argsBuf[:])
		if err == nil {
			err = rows.Next(vals)
			_ = rows.Close()
		}
		var se sqlite3.Error
		switch {
		case errors.As(err, &se) && se.Code == sqlite3.ErrTooBig && limit > 1:
			limit = max(1, limit/8)
			if testHookChunk != nil {
				testHookChunk("fewer")
			}
			continue
		case errors.As(err, &se) && se.Code == sqlite3.ErrTooBig:
			lim.SetLimit(sqliteLimitLength, old)
			if testHookChunk != nil {
				testHookChunk("rest")
			}
			// The rest row by row, in the same order, from the same place.
			return true, nulls, blobs, readKeys(ctx, prep, `SELECT `+s.qCol+` FROM `+s.qTable+` WHERE `+s.qCol+` >= ?1 AND `+s.qCol+
				` < x'' ORDER BY `+s.qCol+` LIMIT -1 OFFSET ?2`, row, driver.NamedValue{Ordinal: 1, Value: last}, driver.NamedValue{Ordinal: 2, Value: skip})
		case err != nil:
			return true, 0, 0, err
		}
		list, _ := vals[0].(string)
		n, _ := vals[1].(int64)
		if keys, err = parseKeyArray(list, keys[:0]); err != nil {
			return true, 0, 0, fmt.Errorf("read keys: %w", err)
		}
		if int64(len(keys)) != n {
			return true, 0, 0, fmt.Errorf("read keys: %d in the array, %d rows", len(keys), n)
		}
		if n == 0 {
			return true, nulls, blobs, nil
		}
		// The chunk's largest key and how many rows hold it, whatever the
		// order json_group_array saw them in.
		top, equal := keys[0], int64(0)
		for _, k := range keys {
			switch {
			case k > top:
				top, equal = k, 1
			case k == top:
				equal++
			}
			if err := row(k); err != nil {
				return true, 0, 0, err
			}
		}
		if top == last {
			skip += equal
		} else {
			last, skip = top, equal
		}
		if n < int64(limit) {
			return true, nulls, blobs, nil
		}
		limit = min(scanChunk, 2*limit)
	}
}

// chunkPage is the paging statement of a chunked scan: ?3 keys from ?1
// on, skipping ?2 rows, as one JSON array, and their count.
func chunkPage(s *store) string {
	return `SELECT json_group_array(` + s.qCol + `), count(*) FROM (SELECT ` + s.qCol + ` FROM ` + s.qTable +
		` WHERE ` + s.qCol + ` >= ?1 AND ` + s.qCol + ` < x'' ORDER BY ` + s.qCol + ` LIMIT ?3 OFFSET ?2)`
}

// walksIndex reports whether SQLite's plan for q reads an index in order,
// with no sorting of its own.
func walksIndex(ctx context.Context, prep driver.ConnPrepareContext, q string) bool {
	rows, done, err := driverQuery(ctx, prep, `EXPLAIN QUERY PLAN `+q,
		driver.NamedValue{Ordinal: 1, Value: ""}, driver.NamedValue{Ordinal: 2, Value: int64(0)}, driver.NamedValue{Ordinal: 3, Value: int64(1)})
	if err != nil {
		return false
	}
	defer done()
	vals := make([]driver.Value, len(rows.Columns()))
	index := false
	for rows.Next(vals) == nil {
		detail, _ := vals[len(vals)-1].(string)
		switch {
		case strings.Contains(detail, "TEMP B-TREE"):
			return false
		case strings.Contains(detail, " USING INDEX ") || strings.Contains(detail, " USING COVERING INDEX "):
			index = true
		}
	}
	return index
}

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
	body := list[1 : len(list)-1]
	for i := 0; i < len(body); {
		if len(out) > 0 {
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
