package store

import (
	"context"
	"database/sql/driver"
	"fmt"
)

// confirmMax is the most keys one confirmation statement carries, and
// listBytes the longest JSON array of them: the keys travel as one JSON
// array parameter (json_each), so one prepared statement serves every
// page size, and SQLite looks them up in sorted order, as it does for an
// IN (...) list.
const (
	confirmMax = 1 << 15
	listBytes  = 1 << 20
)

// confirmSQL returns the confirmation statement: one row, one column, the
// JSON array of the keys found. Keys come back as the source stores them
// (and, through the spellings table, as the canonical spelling asked), and
// the caller compares them with the keys asked, byte for byte: a key
// SQLite did not find, or found under other bytes, is never taken as
// fetched. One row instead of a row per key found saves the driver's
// per-row cost.
//
// single is the variant for one key, bound as itself (?1 is the key, not
// an array): json_each's table costs a few microseconds per statement,
// half a single lookup. The spellings table is asked only about the keys
// in sp (a parameter of its own, an array, or with single the key): the
// caller's, which may be stored in another spelling at all.
func (s *Source) confirmSQL(spellings, single bool, sp string) string {
	in, spIn := ` IN (SELECT value FROM json_each(?1))`, ` IN (SELECT value FROM json_each(`+sp+`))`
	if single {
		in, spIn = ` = ?1`, ` = `+sp
	}
	q := `SELECT ` + s.QCol + ` AS v FROM ` + s.QTable + ` WHERE ` + s.QCol + in
	if spellings {
		q += ` UNION ALL SELECT a.canon FROM ` + s.Spellings + ` a WHERE a.canon` + spIn + `
			AND EXISTS (SELECT 1 FROM ` + s.QTable + ` t WHERE t.` + s.QCol + ` = a.stored)`
	}
	return `SELECT json_group_array(v) FROM (` + q + `)`
}

// confirmShape is one variant of the confirmation statement.
type confirmShape struct{ single, spellings bool }

// Confirm looks keys up in the source and appends to found every key it
// holds: a key asked that is stored as is, or (spelled says which keys,
// spellings whether the source's spellings table has rows) a canonical
// key asked whose stored non-NFC spelling the spellings table names.
func (c *Conn) Confirm(ctx context.Context, s *Source, keys []string, spelled func(string) bool, spellings bool, found []string) ([]string, error) {
	return confirm(ctx, c, &c.buf, s, keys, spelled, spellings, found)
}

// AppConfirm is Confirm on the app's pool (Options.App).
func (db *DB) AppConfirm(ctx context.Context, s *Source, keys []string, spelled func(string) bool, spellings bool, found []string) ([]string, error) {
	var buf []byte
	return confirm(ctx, db.app, &buf, s, keys, spelled, spellings, found)
}

func confirm(ctx context.Context, r runner, buf *[]byte, s *Source, keys []string, spelled func(string) bool, spellings bool, found []string) ([]string, error) {
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
		start = end
		sub := spelledOf(chunk, spelled, spellings)
		shape := confirmShape{single: len(chunk) == 1, spellings: len(sub) > 0}
		q, arg, sarg := qs[shape], "", ""
		if shape.single {
			arg, sarg = chunk[0], chunk[0]
		} else {
			*buf = appendKeyArray((*buf)[:0], chunk)
			arg = string(*buf)
			if shape.spellings {
				sbuf = appendKeyArray(sbuf[:0], sub)
				sarg = string(sbuf)
			}
		}
		args := []driver.NamedValue{{Ordinal: 1, Value: arg}}
		if shape.spellings {
			args = append(args, driver.NamedValue{Ordinal: 2, Value: sarg})
		}
		if err := r.first(ctx, q, vals, args...); err != nil {
			return found, fmt.Errorf("confirm: %w", err)
		}
		list, _ := vals[0].(string)
		var err error
		if found, err = parseKeyArray(list, found); err != nil {
			return found, fmt.Errorf("confirm: %w", err)
		}
	}
	return found, nil
}

// spelledOf returns the keys the spellings table is asked about: those
// spelled reports may be stored in another spelling, when the table has
// rows.
func spelledOf(keys []string, spelled func(string) bool, spellings bool) []string {
	if !spellings || spelled == nil {
		return nil
	}
	var out []string
	for _, k := range keys {
		if spelled(k) {
			out = append(out, k)
		}
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
