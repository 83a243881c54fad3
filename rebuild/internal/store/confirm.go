package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
)

// confirmMax is the most keys one confirmation statement carries, and
// listBytes the longest JSON array of them: the keys travel as one JSON
// array parameter (json_each), so one prepared statement serves every
// page size, each key looked up on its own (through the column's index).
const (
	confirmMax = 1 << 15
	listBytes  = 1 << 20
)

// fitsOne reports whether keys may travel in one statement's array: at
// most confirmMax of them, in at most listBytes before escapes (the array
// built, its length is checked again).
func fitsOne(keys []string) bool {
	return len(keys) <= confirmMax && keyArraySize(keys) <= listBytes
}

// confirmSQL returns the confirmation statement: one row, one column, the
// JSON array of the positions (in the array of keys asked, ?1) of the
// keys the source holds. The comparison is byte equality with a text
// value whatever the column's collation and affinity (sameText): the
// column was checked to have TEXT affinity and BINARY collation
// (checkTable), but a statement of its own, after the probe, may run
// after a migration changed them; a key SQLite did not find under the
// very bytes asked is never taken as fetched. Positions, not the keys found, come back: no string
// to copy out of SQLite or to match again in Go, and no ephemeral table
// of the keys, which IN (SELECT …) would build.
//
// keys is the parameter of the keys asked; single is the variant for one
// key, bound as itself (keys is the key, not an array): json_each's table
// costs a few microseconds per statement, half a single lookup. The
// spellings table is asked about a key only if the source does not hold
// it as asked and it is one of the keys in sp (a parameter of its own:
// the JSON array of their positions, or with single 1), those which may
// be stored in another spelling at all.
func (s *Source) confirmSQL(spellings, single bool, keys, sp string) string {
	val, inSp := `j.value`, `j.key IN (SELECT value FROM json_each(`+sp+`))`
	if single {
		val, inSp = keys, sp+` = 1`
	}
	cond := `EXISTS (SELECT 1 FROM ` + s.QTable + ` t WHERE ` + s.sameText("t", val) + `)`
	if spellings {
		cond += ` OR (` + inSp + ` AND EXISTS (SELECT 1 FROM ` + inMain(s.Spellings) + ` a WHERE a.canon = ` + val + `
			AND EXISTS (SELECT 1 FROM ` + s.QTable + ` t WHERE ` + s.sameText("t", "a.stored") + `)))`
	}
	if single {
		return `SELECT CASE WHEN ` + cond + ` THEN '[0]' ELSE '[]' END`
	}
	return `SELECT json_group_array(j.key) FROM json_each(` + keys + `) j WHERE ` + cond
}

// confirmShape is one variant of the confirmation statement.
type confirmShape struct{ single, spellings bool }

// Confirm looks keys up in the source and appends to found the position
// in keys of every key it holds: a key stored as is,
// or (spelled says which keys, spellings whether the source's spellings
// table has rows) a canonical key whose stored non-NFC spelling the
// spellings table names.
func (c *Conn) Confirm(ctx context.Context, s *Source, keys []string, spelled func(string) bool, spellings bool, found []int) ([]int, error) {
	return confirm(ctx, c, s, keys, spelled, spellings, found)
}

// AppConfirm is Confirm on the app's pool (Options.App).
func (db *DB) AppConfirm(ctx context.Context, s *Source, keys []string, spelled func(string) bool, spellings bool, found []int) ([]int, error) {
	return confirm(ctx, db.app, s, keys, spelled, spellings, found)
}

func confirm(ctx context.Context, r runner, s *Source, keys []string, spelled func(string) bool, spellings bool, found []int) ([]int, error) {
	qs := s.queries().confirm
	spellings = spellings && s.Logged
	vals := make([]driver.Value, 1)
	var sbuf []byte
	for start := 0; start < len(keys); {
		end, size := start, 2
		for end < len(keys) && end-start < confirmMax && (end == start || size+len(keys[end])+3 <= listBytes/6) {
			size += len(keys[end]) + 3
			end++
		}
		chunk := keys[start:end]
		base := start
		start = end
		var sp []byte
		if spellings {
			sp = appendSpelled(sbuf[:0], chunk, spelled)
			sbuf = sp
		}
		shape := confirmShape{single: len(chunk) == 1, spellings: sp != nil}
		args := make([]driver.NamedValue, 1, 2)
		if shape.single {
			args[0] = arg(1, chunk[0])
		} else {
			args[0] = arg(1, keyArray(chunk))
		}
		if shape.spellings {
			args = append(args, spelledArg(2, shape.single, sp))
		}
		if err := r.first(ctx, qs[shape], vals, args...); err != nil {
			return found, fmt.Errorf("confirm: %w", err)
		}
		list, _ := vals[0].(string)
		var err error
		if found, err = parsePositions(list, base, len(chunk), found); err != nil {
			return found, fmt.Errorf("confirm: %w", err)
		}
	}
	return found, nil
}

// appendSpelled appends to b the JSON array of the positions of the keys
// that spelled reports may be stored in another spelling (every key, if
// spelled is nil), and returns nil if there is none: the spellings table
// is then not asked at all.
func appendSpelled(b []byte, keys []string, spelled func(string) bool) []byte {
	b = append(b, '[')
	n := 0
	for i, k := range keys {
		if spelled != nil && !spelled(k) {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(i), 10)
		n++
	}
	if n == 0 {
		return nil
	}
	return append(b, ']')
}

// spelledArg is the spellings parameter at ordinal n: the array sp, or
// for a single key 1 (sp is never empty when asked).
func spelledArg(n int, single bool, sp []byte) driver.NamedValue {
	if single {
		return arg(n, int64(1))
	}
	return arg(n, string(sp))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
