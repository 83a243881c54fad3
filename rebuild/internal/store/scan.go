package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"
)

// ScanHooks are what a scan reports: Begin once, before any key, with the
// log head read before the first key and an estimate of the rows (the
// largest rowid, 0 if none; for progress only); then Keys with every chunk
// of text keys (the slice is reused; the strings stay valid).
type ScanHooks struct {
	Begin func(head Head, estimate int64) error
	Keys  func(keys []string) error
}

// ScanCounts are the ids a scan could not hand over: no text query equals
// a NULL or a BLOB id, nor a text id longer than MaxStoredBytes.
type ScanCounts struct {
	Nulls, Blobs, Long int64
}

// Scan reads every text key of the source, on a connection of its own
// (beside the readers). The head is read first: a row committed before it
// is read, one committed after it is in the log after it. Keys are read
// through the column's index, Knobs.ScanChunk per short statement (the
// app's writers wait at most one chunk), paging strictly by key, so that
// no key committed before the head is skipped; without an index SQLite
// walks, in one statement. Long keys are read as ReadLog's are.
func (db *DB) Scan(ctx context.Context, s *Source, h ScanHooks) (counts ScanCounts, err error) {
	c, err := db.openConn(ctx)
	if err != nil {
		return counts, fmt.Errorf("scan source: %w", err)
	}
	defer c.close()
	head, err := c.Head(ctx, s)
	if err != nil {
		return counts, fmt.Errorf("scan source: %w", err)
	}
	estimate, _ := firstInt(ctx, c, `SELECT max(_rowid_) FROM `+s.QTable) // fails WITHOUT ROWID, NULL when empty
	if err := h.Begin(head, max(estimate, 0)); err != nil {
		return counts, err
	}
	ok := false
	if !db.knobs.NoChunkedScan {
		ok, counts, err = c.scanChunked(ctx, s, h.Keys)
	}
	if !ok && err == nil {
		counts, err = c.scanRows(ctx, s, h.Keys)
	}
	if err != nil {
		return counts, fmt.Errorf("scan source: %w", err)
	}
	return counts, nil
}

// scanChunked reads the keys through the index; ok is false, nothing read,
// when SQLite would not walk an index for the paging statement.
func (c *Conn) scanChunked(ctx context.Context, s *Source, keysFn func([]string) error) (ok bool, counts ScanCounts, err error) {
	if !c.walksIndex(ctx, s.scanSQL(">")) {
		return false, counts, nil
	}
	if counts.Nulls, err = firstInt(ctx, c, `SELECT count(*) FROM `+s.QTable+` WHERE `+s.QCol+` IS NULL`); err == nil {
		counts.Blobs, err = firstInt(ctx, c, `SELECT count(*) FROM `+s.QTable+` WHERE `+s.QCol+` >= x''`)
	}
	var keys []string
	last := ""
	for first, more := true, true; more && err == nil; first = false {
		if ctx.Err() != nil {
			return true, counts, context.Cause(ctx)
		}
		keys, last, more, err = c.scanChunk(ctx, s, first, last, keys[:0], &counts)
		if err == nil && len(keys) > 0 {
			err = keysFn(keys)
		}
	}
	return true, counts, err
}

// scanChunk appends to keys the chunk after last (from it, if first), and
// returns the chunk's largest key and whether another chunk may follow.
func (c *Conn) scanChunk(ctx context.Context, s *Source, first bool, last string, keys []string, counts *ScanCounts) (_ []string, top string, more bool, err error) {
	op := ">"
	if first {
		op = ">="
	}
	limit, short := int64(c.db.knobs.ScanChunk), int64(c.db.knobs.ShortKey)
	vals := make([]driver.Value, 4)
	if err := c.first(ctx, s.scanSQL(op), vals, arg(1, last), arg(2, limit), arg(3, short)); err != nil {
		return keys, "", false, err
	}
	got, _ := vals[1].(int64)
	if got == 0 {
		return keys, "", false, nil
	}
	keys, err = s.parseKeys(vals[0], keys)
	if err == nil {
		top, err = s.parseKey(vals[2])
	}
	if err != nil {
		return keys, "", false, fmt.Errorf("read keys: %w", err)
	}
	long, _ := vals[3].(int64)
	if int64(len(keys))+long != got {
		return keys, "", false, fmt.Errorf("read keys: %d in the array and %d long, %d rows", len(keys), long, got)
	}
	if long > 0 {
		err = c.eachKey(ctx, s, s.longSQL(op), func(k string, ok bool) error {
			if !ok { // too long to stand for any key
				counts.Long++
			} else {
				keys = append(keys, k)
			}
			return nil
		}, arg(1, last), arg(2, top), arg(3, short))
	}
	return keys, top, got == limit, err
}

// scanSQL is the paging statement: ?2 keys after ?1 (op ">"; ">=" for the
// first chunk, from the empty key), those of at most ?3 bytes as one list
// (dialect.go), how many, the largest (quoted), how many longer than ?3.
func (s *Source) scanSQL(op string) string {
	return `SELECT ` + s.groupKeys("k", s.octets("k")+` <= ?3`) + `, count(*), ` + s.quote("max(k)") + `,
		count(*) FILTER (WHERE ` + s.octets("k") + ` > ?3)
		FROM (SELECT ` + s.QCol + ` AS k FROM ` + s.QTable + ` WHERE ` + s.QCol + ` ` + op + ` ?1 AND ` + s.QCol + ` < x'' ORDER BY ` + s.QCol + ` LIMIT ?2)`
}

// longSQL reads the keys of more than ?3 bytes after ?1 (op as scanSQL's)
// up to ?2, one row each: quoted (dialect.go), or NULL when longer than
// MaxStoredBytes.
func (s *Source) longSQL(op string) string {
	return `SELECT CASE WHEN ` + s.octets(s.QCol) + ` <= ` + strconv.Itoa(MaxStoredBytes) + ` THEN ` + s.quote(s.QCol) + ` END FROM ` + s.QTable +
		` WHERE ` + s.QCol + ` ` + op + ` ?1 AND ` + s.QCol + ` <= ?2 AND ` + s.QCol + ` < x'' AND ` + s.octets(s.QCol) + ` > ?3`
}

// scanRows reads the source row by row in one statement, handing text keys
// over in chunks; ctx is checked every chunk.
func (c *Conn) scanRows(ctx context.Context, s *Source, keysFn func([]string) error) (counts ScanCounts, err error) {
	q := `SELECT typeof(` + s.QCol + `), CASE WHEN typeof(` + s.QCol + `) = 'text' AND ` + s.octets(s.QCol) + ` <= ` + strconv.Itoa(MaxStoredBytes) +
		` THEN ` + s.quote(s.QCol) + ` END FROM ` + s.QTable
	dest := make([]driver.Value, 2)
	keys := make([]string, 0, c.db.knobs.ScanChunk)
	flush := func() error {
		if len(keys) == 0 {
			return nil
		}
		err := keysFn(keys)
		keys = keys[:0]
		return err
	}
	err = c.each(ctx, q, dest, func() error {
		switch typ, _ := dest[0].(string); typ {
		case "null":
			counts.Nulls++
		case "blob":
			counts.Blobs++
		case "text":
			if dest[1] == nil {
				counts.Long++
				return nil
			}
			k, err := s.parseKey(dest[1])
			if err != nil {
				return err
			}
			keys = append(keys, k)
		default: // TEXT affinity made every number text
			return fmt.Errorf("read keys: a %s id in a column of TEXT affinity", typ)
		}
		if len(keys) == c.db.knobs.ScanChunk {
			if err := ctx.Err(); err != nil {
				return context.Cause(ctx)
			}
			return flush()
		}
		return nil
	})
	if err != nil {
		return counts, err
	}
	return counts, flush()
}

// walksIndex reports whether SQLite's plan for q reads an index in order,
// with no sorting of its own.
func (c *Conn) walksIndex(ctx context.Context, q string) bool {
	plan, err := queryPlan(ctx, c, q, "", int64(1), int64(1))
	index := false
	for _, detail := range plan {
		if strings.Contains(detail, "TEMP B-TREE") {
			return false
		}
		index = index || strings.Contains(detail, " USING INDEX ") || strings.Contains(detail, " USING COVERING INDEX ")
	}
	return err == nil && index
}

// Empty reports whether the source's table has no row.
func (c *Conn) Empty(ctx context.Context, s *Source) (bool, error) {
	var any bool
	if err := c.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+s.QTable+`)`).Scan(&any); err != nil {
		return false, fmt.Errorf("look at the source: %w", err)
	}
	return !any, nil
}

// CountAll counts the rows to size a rebuilt filter, beside the readers'
// pool: a bare count(*), which SQLite answers from page headers.
func (db *DB) CountAll(ctx context.Context, s *Source) (int64, error) {
	var n int64
	if err := db.r.QueryRowContext(db.Driver.QueryContext(ctx), `SELECT count(*) FROM `+s.QTable).Scan(&n); err != nil {
		return 0, fmt.Errorf("count rows: %w", err)
	}
	return n, nil
}
