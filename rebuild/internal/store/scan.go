package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mattn/go-sqlite3"
)

// Test switches: ScanChunk is how many keys one statement of a chunked
// scan returns, NoChunkedScan turns chunked scans off (the tests compare
// both ways), chunkBytes is the longest value SQLite may build while
// paging (SQLITE_LIMIT_LENGTH), TestHookChunk hears "fewer" when a chunk
// is asked again with fewer keys and "rest" when a scan goes on row by
// row, TestHookScanKeys runs with every chunk of keys and can fail it.
var (
	ScanChunk        = 4096
	NoChunkedScan    = false
	chunkBytes       = 4 << 20
	TestHookChunk    func(event string)
	TestHookScanKeys func(n int) error
)

// sqliteLimitLength is SQLITE_LIMIT_LENGTH, the longest string or BLOB a
// connection builds or reads.
const sqliteLimitLength = 0

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
// equal a NULL or a BLOB id.
type ScanCounts struct {
	Nulls, Blobs int64
}

// Scan reads every text key of the source. The log head is read first:
// every row committed before it is read (unless deleted meanwhile), every
// row committed after it is in the log after it, so a filter of the keys
// read, caught up on the log from the head, covers the source.
//
// Keys are read through the column's index in chunks (ScanChunk keys per
// statement, each chunk one row holding them as a JSON array), each chunk
// its own short statement: no read transaction spans the scan, so in a
// rollback-journal mode the app's writers wait at most one chunk. Paging
// is strictly by key (the next chunk starts after the largest key of the
// last one): a key stored in several rows is read at least once, and no
// key committed before the head is ever skipped, whatever the app writes
// or deletes between chunks. Without an index SQLite walks for the paging
// statement, the keys are read row by row in one statement.
//
// Memory stays bounded whatever the keys' lengths: while paging, the
// connection refuses to build a value over chunkBytes; a chunk that would
// is asked again with fewer keys, and a key longer than that sends the
// rest of the scan row by row, from the same place. ctx is checked
// between chunks.
//
// The scan reads on a connection of its own, outside the readers' pool:
// the hooks run the app's Progress callback, which may ask the index
// (Fetched, Missing) and must find a reader free.
func (db *DB) Scan(ctx context.Context, s *Source, h ScanHooks) (counts ScanCounts, err error) {
	sc, err := db.r.Conn(ctx)
	if err != nil {
		return counts, fmt.Errorf("scan source: %w", err)
	}
	c, err := newConn(sc)
	if err != nil {
		return counts, fmt.Errorf("scan source: %w", err)
	}
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
	err = c.raw(func(dc *sqlite3.SQLiteConn) error {
		if !NoChunkedScan {
			ok, n, err := c.scanChunked(ctx, dc, s, h.Keys)
			if ok || err != nil {
				counts = n
				return err
			}
		}
		counts, err = c.scanRows(ctx, dc, `SELECT `+s.QCol+` FROM `+s.QTable, h.Keys)
		return err
	})
	if err != nil {
		return counts, fmt.Errorf("scan source: %w", err)
	}
	return counts, nil
}

// scanChunked reads the keys through the index. ok is false, having read
// nothing, when SQLite would not walk an index for the paging statement.
func (c *Conn) scanChunked(ctx context.Context, dc *sqlite3.SQLiteConn, s *Source, keysFn func([]string) error) (ok bool, counts ScanCounts, err error) {
	first, next := s.chunkSQL(">="), s.chunkSQL(">")
	if !walksIndex(ctx, dc, next) {
		return false, counts, nil
	}
	one := func(q string) (int64, error) {
		st, err := c.prepared(dc, q)
		if err != nil {
			return 0, err
		}
		v := make([]driver.Value, 1)
		if err := queryFirst(ctx, st, v, nil); err != nil {
			return 0, err
		}
		n, _ := v[0].(int64)
		return n, nil
	}
	if counts.Nulls, err = one(`SELECT count(*) FROM ` + s.QTable + ` WHERE ` + s.QCol + ` IS NULL`); err != nil {
		return true, counts, err
	}
	if counts.Blobs, err = one(`SELECT count(*) FROM ` + s.QTable + ` WHERE ` + s.QCol + ` >= x''`); err != nil {
		return true, counts, err
	}
	// Numbers cannot be in a column of TEXT affinity; read as text if any.
	if _, err := c.scanRows(ctx, dc, `SELECT `+s.QCol+` FROM `+s.QTable+` WHERE `+s.QCol+` < ''`, keysFn); err != nil {
		return true, counts, err
	}
	old := dc.SetLimit(sqliteLimitLength, chunkBytes)
	defer dc.SetLimit(sqliteLimitLength, old)
	var (
		q     = first
		last  = ""
		limit = ScanChunk
		keys  []string
		vals  = make([]driver.Value, 3)
		args  [2]driver.NamedValue
	)
	for {
		if err := ctx.Err(); err != nil {
			return true, counts, context.Cause(ctx)
		}
		st, err := c.prepared(dc, q)
		if err != nil {
			return true, counts, err
		}
		args[0] = driver.NamedValue{Ordinal: 1, Value: last}
		args[1] = driver.NamedValue{Ordinal: 2, Value: int64(limit)}
		err = queryFirst(ctx, st, vals, args[:])
		var se sqlite3.Error
		switch {
		case errors.As(err, &se) && se.Code == sqlite3.ErrTooBig && limit > 1:
			limit = max(1, limit/8)
			if TestHookChunk != nil {
				TestHookChunk("fewer")
			}
			continue
		case errors.As(err, &se) && se.Code == sqlite3.ErrTooBig:
			dc.SetLimit(sqliteLimitLength, maxLength)
			if TestHookChunk != nil {
				TestHookChunk("rest")
			}
			// The rest row by row, in the same order, from the same place.
			op := ">"
			if q == first {
				op = ">="
			}
			rest := `SELECT ` + s.QCol + ` FROM ` + s.QTable + ` WHERE ` + s.QCol + ` ` + op + ` ?1 AND ` + s.QCol + ` < x'' ORDER BY ` + s.QCol
			_, err := c.scanRows(ctx, dc, rest, keysFn, driver.NamedValue{Ordinal: 1, Value: last})
			return true, counts, err
		case err != nil:
			return true, counts, err
		}
		list, _ := vals[0].(string)
		got, _ := vals[1].(int64)
		if keys, err = parseKeyArray(list, keys[:0]); err != nil {
			return true, counts, fmt.Errorf("read keys: %w", err)
		}
		if int64(len(keys)) != got {
			return true, counts, fmt.Errorf("read keys: %d in the array, %d rows", len(keys), got)
		}
		if got == 0 {
			return true, counts, nil
		}
		if TestHookScanKeys != nil {
			if err := TestHookScanKeys(len(keys)); err != nil {
				return true, counts, err
			}
		}
		if err := keysFn(keys); err != nil {
			return true, counts, err
		}
		top, _ := vals[2].(string)
		last, q = top, next
		if got < int64(limit) {
			return true, counts, nil
		}
		limit = min(ScanChunk, 2*limit)
	}
}

// chunkSQL is a paging statement of a chunked scan: ?2 keys after ?1 (op
// ">"; ">=" for the first chunk, from the empty key), as one JSON array,
// their count, and the largest.
func (s *Source) chunkSQL(op string) string {
	return `SELECT json_group_array(k), count(*), max(k) FROM (SELECT ` + s.QCol + ` AS k FROM ` + s.QTable +
		` WHERE ` + s.QCol + ` ` + op + ` ?1 AND ` + s.QCol + ` < x'' ORDER BY ` + s.QCol + ` LIMIT ?2)`
}

// scanRows reads q row by row in one statement, handing text keys over in
// chunks and counting NULL and BLOB ids; ctx is checked every chunk.
func (c *Conn) scanRows(ctx context.Context, dc *sqlite3.SQLiteConn, q string, keysFn func([]string) error, args ...driver.NamedValue) (counts ScanCounts, err error) {
	st, err := dc.Prepare(q)
	if err != nil {
		return counts, err
	}
	defer st.Close()
	rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return counts, err
	}
	defer rows.Close()
	dest := make([]driver.Value, 1)
	keys := make([]string, 0, ScanChunk)
	flush := func() error {
		if len(keys) == 0 {
			return nil
		}
		if TestHookScanKeys != nil {
			if err := TestHookScanKeys(len(keys)); err != nil {
				return err
			}
		}
		err := keysFn(keys)
		keys = keys[:0]
		return err
	}
	for {
		if err := rows.Next(dest); err != nil {
			if err == io.EOF {
				return counts, flush()
			}
			return counts, err
		}
		switch v := dest[0].(type) {
		case string:
			keys = append(keys, v)
		case nil:
			counts.Nulls++
		case []byte:
			counts.Blobs++
		default: // a number in a TEXT column cannot be: affinity made it text
			keys = append(keys, fmt.Sprint(v))
		}
		if len(keys) == ScanChunk {
			if err := ctx.Err(); err != nil {
				return counts, context.Cause(ctx)
			}
			if err := flush(); err != nil {
				return counts, err
			}
		}
	}
}

// walksIndex reports whether SQLite's plan for q reads an index in order,
// with no sorting of its own.
func walksIndex(ctx context.Context, dc *sqlite3.SQLiteConn, q string) bool {
	st, err := dc.Prepare(`EXPLAIN QUERY PLAN ` + q)
	if err != nil {
		return false
	}
	defer st.Close()
	rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, []driver.NamedValue{{Ordinal: 1, Value: ""}, {Ordinal: 2, Value: int64(1)}})
	if err != nil {
		return false
	}
	defer rows.Close()
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
