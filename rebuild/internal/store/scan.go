package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ScanHooks are what a scan reports, in this order: Begin, once, before
// any key, with the log head read before the first key and a cheap
// estimate of the rows (the largest rowid; 0 when there is none), for
// progress only; then Keys with every chunk of text keys (the slice is
// reused; the strings stay valid).
type ScanHooks struct {
	Begin func(head Head, estimate int64) error
	Keys  func(keys []string) error
}

// ScanCounts are the ids a scan could not hand over: no text query can
// equal a NULL or a BLOB id, nor a text id too long to stand for any key
// (more than MaxStoredBytes).
type ScanCounts struct {
	Nulls, Blobs, Long int64
}

// Scan reads every text key of the source. The log head is read first:
// every row committed before it is read (unless deleted meanwhile), every
// row committed after it is in the log after it, so a filter of the keys
// read, caught up on the log from the head, covers the source.
//
// Keys are read through the column's index in chunks (Knobs.ScanChunk
// keys per statement, each chunk one row holding them as a JSON array),
// each chunk its own short statement: no read transaction spans the scan,
// so in a rollback-journal mode the app's writers wait at most one chunk.
// Paging is strictly by key (the next chunk starts after the largest key
// of the last one): a key stored in several rows is read at least once,
// and no key committed before the head is ever skipped, whatever the app
// writes or deletes between chunks. Without an index SQLite walks for the
// paging statement, the keys are read row by row in one statement.
//
// Memory stays bounded whatever the keys' lengths: a chunk's array holds
// keys of at most Knobs.ShortKey bytes, the longer ones of the chunk are
// read one by one after it, and keys too long to stand for any key are
// counted, never read (only the largest key of a chunk, where the next
// one starts, is read whatever its length). ctx is checked between
// chunks.
//
// The scan reads on a connection of its own, beside the readers' pool,
// so that it never waits for a reader: the calls that run meanwhile, the
// app's Progress callback among them, keep theirs.
func (db *DB) Scan(ctx context.Context, s *Source, h ScanHooks) (counts ScanCounts, err error) {
	sc, err := db.r.Conn(ctx)
	if err != nil {
		return counts, fmt.Errorf("scan source: %w", err)
	}
	c := newConn(db, sc)
	defer c.close()
	head, err := c.Head(ctx, s)
	if err != nil {
		return counts, fmt.Errorf("scan source: %w", err)
	}
	var estimate int64
	var v [1]driver.Value
	if err := c.first(ctx, `SELECT max(_rowid_) FROM `+s.QTable, v[:]); err == nil { // fails WITHOUT ROWID
		estimate, _ = v[0].(int64)
	}
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

// scanChunked reads the keys through the index. ok is false, having read
// nothing, when SQLite would not walk an index for the paging statement.
func (c *Conn) scanChunked(ctx context.Context, s *Source, keysFn func([]string) error) (ok bool, counts ScanCounts, err error) {
	q := s.queries()
	if !c.walksIndex(ctx, q.scanNext) {
		return false, counts, nil
	}
	count := func(q string) (int64, error) {
		v := make([]driver.Value, 1)
		if err := c.first(ctx, q, v); err != nil {
			return 0, err
		}
		n, _ := v[0].(int64)
		return n, nil
	}
	if counts.Nulls, err = count(`SELECT count(*) FROM ` + s.QTable + ` WHERE ` + s.QCol + ` IS NULL`); err != nil {
		return true, counts, err
	}
	if counts.Blobs, err = count(`SELECT count(*) FROM ` + s.QTable + ` WHERE ` + s.QCol + ` >= x''`); err != nil {
		return true, counts, err
	}
	var (
		first = true
		last  = ""
		limit = int64(c.db.knobs.ScanChunk)
		short = int64(c.db.knobs.ShortKey)
		keys  []string
		vals  = make([]driver.Value, 4)
	)
	for {
		if err := ctx.Err(); err != nil {
			return true, counts, context.Cause(ctx)
		}
		stmt, longStmt := q.scanNext, q.longNext
		if first {
			stmt, longStmt = q.scanFirst, q.longFirst
		}
		if err := c.first(ctx, stmt, vals, arg(1, last), arg(2, limit), arg(3, short)); err != nil {
			return true, counts, err
		}
		got, _ := vals[1].(int64)
		if got == 0 {
			return true, counts, nil
		}
		list, _ := vals[0].(string)
		if keys, err = parseKeyArray(list, keys[:0]); err != nil {
			return true, counts, fmt.Errorf("read keys: %w", err)
		}
		top, _ := vals[2].(string)
		if top, err = parseString(top); err != nil {
			return true, counts, fmt.Errorf("read keys: %w", err)
		}
		long, _ := vals[3].(int64)
		if int64(len(keys))+long != got {
			return true, counts, fmt.Errorf("read keys: %d in the array and %d long, %d rows", len(keys), long, got)
		}
		if long > 0 {
			dest := make([]driver.Value, 1)
			err := c.each(ctx, longStmt, dest, func() error {
				s, isText := dest[0].(string)
				if !isText { // too long to stand for any key
					counts.Long++
					return nil
				}
				k, err := parseString(s)
				if err == nil {
					keys = append(keys, k)
				}
				return err
			}, arg(1, last), arg(2, top), arg(3, short))
			if err != nil {
				return true, counts, err
			}
		}
		if len(keys) > 0 {
			if err := keysFn(keys); err != nil {
				return true, counts, err
			}
		}
		last, first = top, false
		if got < limit {
			return true, counts, nil
		}
	}
}

// scanSQL is the paging statement of a chunked scan: ?2 keys after ?1 (op
// ">"; ">=" for the first chunk, from the empty key), the ones of at most
// ?3 bytes as one JSON array, how many there are, the largest (as a JSON
// string), and how many of them are longer than ?3.
func (s *Source) scanSQL(op string) string {
	return `SELECT json_group_array(k) FILTER (WHERE octet_length(k) <= ?3), count(*), json_quote(max(k)),
		count(*) FILTER (WHERE octet_length(k) > ?3)
		FROM (SELECT ` + s.QCol + ` AS k FROM ` + s.QTable + ` WHERE ` + s.QCol + ` ` + op + ` ?1 AND ` + s.QCol + ` < x'' ORDER BY ` + s.QCol + ` LIMIT ?2)`
}

// longSQL reads, one row each, the keys of more than ?3 bytes after ?1 (op
// as scanSQL's) up to ?2, each a JSON string, or NULL when it is too long
// to stand for any key.
func (s *Source) longSQL(op string) string {
	return `SELECT CASE WHEN octet_length(` + s.QCol + `) <= ` + strconv.Itoa(tooLong) + ` THEN json_quote(` + s.QCol + `) END FROM ` + s.QTable +
		` WHERE ` + s.QCol + ` ` + op + ` ?1 AND ` + s.QCol + ` <= ?2 AND ` + s.QCol + ` < x'' AND octet_length(` + s.QCol + `) > ?3`
}

// scanRows reads the source row by row in one statement (no index to
// page through), handing text keys over in chunks and counting the ids it
// cannot hand over; ctx is checked every chunk.
func (c *Conn) scanRows(ctx context.Context, s *Source, keysFn func([]string) error) (counts ScanCounts, err error) {
	q := `SELECT typeof(` + s.QCol + `), CASE WHEN typeof(` + s.QCol + `) = 'text' AND octet_length(` + s.QCol + `) <= ` + strconv.Itoa(tooLong) +
		` THEN json_quote(` + s.QCol + `) END FROM ` + s.QTable
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
			js, ok := dest[1].(string)
			if !ok {
				counts.Long++
				return nil
			}
			k, err := parseString(js)
			if err != nil {
				return err
			}
			keys = append(keys, k)
		default: // a number in a column of TEXT affinity cannot be: affinity made it text
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
	index := false
	err := c.raw(func(dc driver.Conn) error {
		st, err := prepare(ctx, dc, `EXPLAIN QUERY PLAN `+q)
		if err != nil {
			return err
		}
		defer st.Close()
		rows, err := c.query(ctx, st, []driver.NamedValue{arg(1, ""), arg(2, int64(1)), arg(3, int64(1))})
		if err != nil {
			return err
		}
		defer rows.Close()
		vals := make([]driver.Value, len(rows.Columns()))
		for {
			if err := rows.Next(vals); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
			detail, _ := vals[len(vals)-1].(string)
			switch {
			case strings.Contains(detail, "TEMP B-TREE"):
				index = false
				return nil
			case strings.Contains(detail, " USING INDEX ") || strings.Contains(detail, " USING COVERING INDEX "):
				index = true
			}
		}
	})
	return err == nil && index
}

// Empty reports whether the source's table has no row, read on the
// connection.
func (c *Conn) Empty(ctx context.Context, s *Source) (bool, error) {
	var any bool
	if err := c.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+s.QTable+`)`).Scan(&any); err != nil {
		return false, fmt.Errorf("look at the source: %w", err)
	}
	return !any, nil
}

// CountAll counts the source's rows, NULL ids included: the bare count(*)
// SQLite answers from the smallest b-tree's page headers (a WHERE would
// make it read every entry). It sizes a rebuilt filter. It runs on a
// connection of its own, outside the readers' pool, as the scan beside it
// does: the filter's builder may wait for the count while readers are
// busy.
func (db *DB) CountAll(ctx context.Context, s *Source) (int64, error) {
	var n int64
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM `+s.QTable).Scan(&n); err != nil {
		return 0, fmt.Errorf("count rows: %w", err)
	}
	return n, nil
}
