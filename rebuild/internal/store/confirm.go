package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
)

// The statements that confirm keys compare byte for byte with a text value
// (sameText) whatever the column's collation and affinity are now: a
// migration may change them after the source was checked, and a key SQLite
// did not find under the very bytes asked is never taken as fetched.

// runner runs a statement and reads its first row: a Conn or the app's
// pool (appRunner).
type runner interface {
	first(ctx context.Context, q string, dest []driver.Value, args ...driver.NamedValue) error
}

// sameText is the condition that alias t's key is val, as text and with
// BINARY forced; with the column's BINARY collation its index serves it.
func (s *Source) sameText(t, val string) string {
	col := t + `.` + s.QCol
	return col + ` = ` + val + ` COLLATE BINARY AND typeof(` + col + `) = 'text'`
}

// lookupSQL answers whether the table holds the key ?1.
func (s *Source) lookupSQL() string {
	return `SELECT EXISTS (SELECT 1 FROM ` + s.QTable + ` t WHERE ` + s.sameText("t", "?1") + `)`
}

// Lookup reports whether the source holds key as asked, without the log,
// the filter or the spellings (exact for a key with no other spelling).
func (c *Conn) Lookup(ctx context.Context, s *Source, key string) (bool, error) {
	return lookup(ctx, c, s, key)
}

// AppLookup is Lookup on the app's pool.
func (db *DB) AppLookup(ctx context.Context, s *Source, key string) (bool, error) {
	return lookup(ctx, db.app, s, key)
}

func lookup(ctx context.Context, r runner, s *Source, key string) (bool, error) {
	found, err := firstInt(ctx, r, s.sql(lookupStmt{}), arg(1, key))
	if err != nil {
		return false, fmt.Errorf("look up in %s: %w", s.Table, err)
	}
	return found != 0, nil
}

// A confirmation carries at most confirmMax keys, as one JSON array
// parameter of at most listBytes (json_each: one prepared statement for
// every page size, each key looked up through the column's index); plain,
// at most plainMax.
const (
	confirmMax = 1 << 15
	listBytes  = 1 << 20
)

// fitsOne reports whether keys may travel in one array (its length before
// escapes; the caller checks it again once built).
func (s *Source) fitsOne(keys []string) bool {
	if s.plain {
		return len(keys) <= plainMax
	}
	return len(keys) <= confirmMax && keyArraySize(keys) <= listBytes
}

// confirmShape is one variant of the confirmation statement (versioned:
// the keys' stored versions are read too, versionsSQL; size: plain, the
// keys it binds, from ?3 on).
type confirmShape struct {
	single, spellings, versioned bool
	size                         int
}

// confirmSQL returns one row: the list (dialect.go) of the positions, in the
// keys (the FROM item keysFrom returns), of the keys the source holds
// (positions: no string to copy out and match again, no ephemeral table as
// IN (SELECT …) builds). single binds the one key as itself, the parameter
// keys (json_each costs half a lookup). With spellings, a key not held as
// asked is looked up in the spellings table if its position is in the
// list sp (single: sp = 1).
func (s *Source) confirmSQL(spellings, single bool, keys, sp string) string {
	val, inSp := `j.value`, s.inPositions(`j.key`, sp)
	if single {
		val, inSp = keys, sp+` = 1`
	}
	cond := `EXISTS (SELECT 1 FROM ` + s.QTable + ` t WHERE ` + s.sameText("t", val) + `)`
	if spellings {
		cond += ` OR (` + inSp + ` AND EXISTS (SELECT 1 FROM ` + inMain(s.Spellings) + ` a WHERE a.canon = ` + val + `
			AND EXISTS (SELECT 1 FROM ` + s.QTable + ` t WHERE ` + s.sameText("t", "a.stored") + `)))`
	}
	switch {
	case single && s.plain:
		return `SELECT CASE WHEN ` + cond + ` THEN '0' END`
	case single:
		return `SELECT CASE WHEN ` + cond + ` THEN '[0]' ELSE '[]' END`
	}
	return `SELECT ` + s.groupPositions(`j.key`) + ` FROM ` + keys + ` WHERE ` + cond
}

// versionsSQL is confirmSQL for keys asked with versions: one row, the
// list of one value per key of keys (single: the one key ?1; plain, only
// the non-null values, in the keys' order): null when the source holds no
// row with the key; else a text, the key's
// position, then 'i' and the highest integer its rows hold (an INTEGER
// column), 't' and the highest text in byte order (a TEXT column), or
// 'o' if none holds one (NULL, or a value of another type). The position
// lets compareVersions check that the values come in the keys' order (no
// ORDER BY: a sort costs a quarter of the statement). Each key's rows are
// read once, through the key's index; with spellings, its rows under its
// stored spellings too if its position is in sp.
func (s *Source) versionsSQL(spellings, single bool, keys, sp string) string {
	val, inSp := `j.value`, s.inPositions(`j.key`, sp)
	if single {
		val, inSp = keys, sp+` = 1`
	}
	pos, typed := `j.key`, `'i' || max(CASE WHEN typeof(v) = 'integer' THEN v END)`
	if !s.VerInt {
		typed = `'t' || max(CASE WHEN typeof(v) = 'text' THEN v END)`
	}
	if single {
		pos = `0`
	}
	rows := `(SELECT t.` + s.QVer + ` AS v FROM ` + s.QTable + ` t WHERE ` + s.sameText("t", val)
	if spellings {
		rows += ` UNION ALL SELECT t.` + s.QVer + ` FROM ` + inMain(s.Spellings) + ` a, ` + s.QTable + ` t WHERE ` + inSp +
			` AND a.canon = ` + val + ` AND ` + s.sameText("t", "a.stored")
	}
	x := `(SELECT CASE WHEN count(*) = 0 THEN NULL ELSE ` + pos + ` || coalesce(` + typed + `, 'o') END FROM ` + rows + `))`
	from := ` FROM ` + keys
	if single {
		from = ""
	}
	if s.plain {
		return `SELECT group_concat(` + item("v") + `, '') FROM (SELECT ` + x + ` AS v` + from + `)`
	}
	if single {
		return `SELECT json_array(` + x + `)`
	}
	return `SELECT json_group_array(` + x + `)` + from
}

// Confirm appends to found the position in keys of every key the source
// holds as is or, if spellings (the table has rows) and spelled(key), in a
// stored non-NFC spelling. With vers (one per key, an int64 or a string)
// it appends to older those of found whose rows hold no version >= the
// key's of the same type (compareVersions).
func (c *Conn) Confirm(ctx context.Context, s *Source, keys []string, vers []any, spelled func(string) bool, spellings bool, found, older []int) ([]int, []int, error) {
	return confirm(ctx, c, s, keys, vers, spelled, spellings, found, older)
}

// AppConfirm is Confirm on the app's pool.
func (db *DB) AppConfirm(ctx context.Context, s *Source, keys []string, vers []any, spelled func(string) bool, spellings bool, found, older []int) ([]int, []int, error) {
	return confirm(ctx, db.app, s, keys, vers, spelled, spellings, found, older)
}

func confirm(ctx context.Context, r runner, s *Source, keys []string, vers []any, spelled func(string) bool, spellings bool, found, older []int) ([]int, []int, error) {
	spellings = spellings && s.Logged
	vals := make([]driver.Value, 1)
	var sbuf []byte
	for start := 0; start < len(keys); {
		end, size := start, 2
		most := confirmMax
		if s.plain {
			most = plainMax
		}
		for end < len(keys) && end-start < most && (end == start || size+len(keys[end])+3 <= listBytes/6) {
			size += len(keys[end]) + 3
			end++
		}
		chunk, base := keys[start:end], start
		start = end
		var sp []byte
		if spellings {
			sp = s.appendSpelled(sbuf[:0], chunk, spelled)
			sbuf = sp
		}
		shape := confirmShape{single: len(chunk) == 1, spellings: sp != nil, versioned: vers != nil}
		// ?1 the keys (a JSON array, or the one key), ?2 the spellings'
		// positions; plain, the keys from ?3 on. Every parameter up to
		// the highest the statement names is bound (drivers count them).
		args := make([]driver.NamedValue, 1, 2)
		switch {
		case shape.single:
			args[0] = arg(1, chunk[0])
		case s.plain:
			shape.size = plainSize(len(chunk))
			args = s.keyArgs(append(args[:0], arg(1, nil), arg(2, nil)), chunk, 3, shape.size)
		default:
			args = s.keyArgs(args[:0], chunk, 1, 0)
		}
		if shape.spellings {
			sa := s.spelledArg(2, shape.single, sp)
			if len(args) > 1 {
				args[1] = sa
			} else {
				args = append(args, sa)
			}
		}
		err := r.first(ctx, s.sql(shape), vals, args...)
		if err == nil {
			if vers != nil {
				found, older, err = s.compareVersions(vals[0], base, vers[base:end], found, older)
			} else {
				found, err = s.parsePositions(vals[0], base, len(chunk), found)
			}
		}
		if err != nil {
			return found, older, fmt.Errorf("confirm: %w", err)
		}
	}
	return found, older, nil
}

// appendSpelled appends to b the list of the positions of the keys spelled
// reports (all, if nil), or returns nil if there is none: a JSON array, or
// plain a byte per key, '1' for those (inPositions reads either).
func (s *Source) appendSpelled(b []byte, keys []string, spelled func(string) bool) []byte {
	if !s.plain {
		b = append(b, '[')
	}
	n := 0
	for i, k := range keys {
		if spelled != nil && !spelled(k) {
			if s.plain {
				b = append(b, '0')
			}
			continue
		}
		switch {
		case s.plain:
			b = append(b, '1')
		case n > 0:
			b = append(b, ',')
			fallthrough
		default:
			b = strconv.AppendInt(b, int64(i), 10)
		}
		n++
	}
	if n == 0 {
		return nil
	}
	if s.plain {
		return b
	}
	return append(b, ']')
}

// spelledArg is the spellings parameter n: the list sp, or 1 for a single
// key.
func (s *Source) spelledArg(n int, single bool, sp []byte) driver.NamedValue {
	switch {
	case single:
		return arg(n, int64(1))
	case s.plain:
		return arg(n, sp)
	}
	return arg(n, string(sp))
}
