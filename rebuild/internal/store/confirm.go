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
// half a single lookup.
func (s *Source) confirmSQL(spellings, single bool) string {
	in := ` IN (SELECT value FROM json_each(?1))`
	if single {
		in = ` = ?1`
	}
	q := `SELECT ` + s.QCol + ` AS v FROM ` + s.QTable + ` WHERE ` + s.QCol + in
	if spellings {
		q += ` UNION ALL SELECT a.canon FROM ` + s.Spellings + ` a WHERE a.canon` + in + `
			AND EXISTS (SELECT 1 FROM ` + s.QTable + ` t WHERE t.` + s.QCol + ` = a.stored)`
	}
	return `SELECT json_group_array(v) FROM (` + q + `)`
}

// confirmShape is one variant of the confirmation statement.
type confirmShape struct{ single, spellings bool }

// Confirm looks keys up in the source and appends to found every key it
// holds: a key asked that is stored as is, or (spellings: the source's
// spellings table has rows) a canonical key asked whose stored non-NFC
// spelling the spellings table names.
func (c *Conn) Confirm(ctx context.Context, s *Source, keys []string, spellings bool, found []string) ([]string, error) {
	return confirm(ctx, c, &c.buf, s, keys, spellings, found)
}

// AppConfirm is Confirm on the app's pool (Options.App).
func (db *DB) AppConfirm(ctx context.Context, s *Source, keys []string, spellings bool, found []string) ([]string, error) {
	var buf []byte
	return confirm(ctx, db.app, &buf, s, keys, spellings, found)
}

func confirm(ctx context.Context, r runner, buf *[]byte, s *Source, keys []string, spellings bool, found []string) ([]string, error) {
	qs := s.queries().confirm
	spellings = spellings && s.Logged
	vals := make([]driver.Value, 1)
	for start := 0; start < len(keys); {
		end, size := start, 2
		for end < len(keys) && end-start < confirmMax && (end == start || size+len(keys[end])+3 <= listBytes/6) {
			size += len(keys[end]) + 3
			end++
		}
		q, arg := qs[confirmShape{spellings: spellings}], ""
		if end-start == 1 {
			q, arg = qs[confirmShape{single: true, spellings: spellings}], keys[start]
		} else {
			*buf = appendKeyArray((*buf)[:0], keys[start:end])
			arg = string(*buf)
		}
		start = end
		if err := r.first(ctx, q, vals, driver.NamedValue{Ordinal: 1, Value: arg}); err != nil {
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

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
