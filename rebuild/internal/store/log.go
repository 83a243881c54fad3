package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/mattn/go-sqlite3"
)

// Head is the state of a source's log, read in one statement.
type Head struct {
	Seq      uint64 // the newest log entry: the source's generation
	Floor    uint64 // entries at or below may have been deleted (compaction)
	Epoch    uint64 // moves on when the source is attached again
	AliasGen uint64 // with Scanned: the alias table holds every stored non-NFC spelling logged up to here
	Scanned  bool   // a full scan completed in this epoch
	Aliases  bool   // the alias table has a row
}

// headSQL reads the source's Head.
func (s *Source) headSQL() string {
	epoch, aliasGen := "0", "log_floor"
	if s.cols.epoch {
		epoch = "epoch"
	}
	if s.cols.aliasGen {
		aliasGen = "alias_gen"
	}
	return `SELECT coalesce((SELECT max(seq) FROM ` + s.Log + `), 0), log_floor, ` + epoch + `, ` + aliasGen + `, scanned,
		EXISTS (SELECT 1 FROM ` + s.Alias + `) FROM ` + SourcesTable + ` WHERE id = ` + strconv.FormatInt(s.ID, 10)
}

// Head reads the source's log head.
func (c *Conn) Head(ctx context.Context, s *Source) (Head, error) {
	var v [6]driver.Value
	if err := c.first(ctx, s.queries().head, v[:]); err != nil {
		if errors.Is(err, errNoRow) {
			return Head{}, fmt.Errorf("read log head of %s: %w", s.Table, ErrNotAttached)
		}
		return Head{}, fmt.Errorf("read log head of %s: %w", s.Table, err)
	}
	var n [6]int64
	for i := range v {
		x, ok := v[i].(int64)
		if !ok || x < 0 {
			return Head{}, fmt.Errorf("read log head of %s: unexpected value %v", s.Table, v[i])
		}
		n[i] = x
	}
	return Head{Seq: uint64(n[0]), Floor: uint64(n[1]), Epoch: uint64(n[2]), AliasGen: uint64(n[3]), Scanned: n[4] != 0, Aliases: n[5] != 0}, nil
}

// logChunk is how many log entries one statement of ReadLog reads.
var logChunk = 1024

// ReadLog hands the text keys logged with after < seq <= upTo to fn, in
// order, in chunks: one statement and one JSON array per chunk instead of
// a driver call and a string per entry. With nonASCII, only keys holding
// a character outside ASCII (the only ones that can be stored in a form
// other than NFC) are read, SQLite skipping the others. Keys logged as
// BLOB (never equal to a text id) are skipped.
//
// A chunk is a range of sequence numbers, not "ORDER BY seq LIMIT n",
// which SQLite runs as a co-routine that costs about as much again as
// reading the entries. Sequence numbers have gaps only where entries were
// deleted (compaction, or by hand): an empty range says where the next
// entry is, and the read jumps there.
//
// fn gets each chunk with the sequence number it reads up to.
func (c *Conn) ReadLog(ctx context.Context, s *Source, after, upTo uint64, nonASCII bool, fn func(read uint64, keys []string) error) error {
	q := s.queries().log[b2i(nonASCII)]
	err := c.raw(func(dc *sqlite3.SQLiteConn) error {
		st, err := c.prepared(dc, q)
		if err != nil {
			return err
		}
		old := dc.SetLimit(sqliteLimitLength, chunkBytes)
		defer dc.SetLimit(sqliteLimitLength, old)
		var (
			limit = uint64(logChunk)
			vals  = make([]driver.Value, 3)
			args  [3]driver.NamedValue
			keys  []string
		)
		for after < upTo {
			end := after + min(limit, upTo-after)
			args[0] = driver.NamedValue{Ordinal: 1, Value: int64(after)}
			args[1] = driver.NamedValue{Ordinal: 2, Value: int64(end)}
			args[2] = driver.NamedValue{Ordinal: 3, Value: int64(upTo)}
			err := queryFirst(ctx, st, vals, args[:])
			var se sqlite3.Error
			switch {
			case errors.As(err, &se) && se.Code == sqlite3.ErrTooBig && limit > 1:
				limit = max(1, limit/8)
				continue
			case errors.As(err, &se) && se.Code == sqlite3.ErrTooBig:
				// One entry longer than chunkBytes: read it alone, as is.
				dc.SetLimit(sqliteLimitLength, maxLength)
				next, key, isText, err := oneEntry(ctx, c, dc, s, after, upTo)
				dc.SetLimit(sqliteLimitLength, chunkBytes)
				if err != nil {
					return err
				}
				var keys []string
				if isText && (!nonASCII || !isASCII(key)) {
					keys = []string{key}
				}
				if err := fn(next, keys); err != nil {
					return err
				}
				after, limit = next, 1
				continue
			case err != nil:
				return err
			}
			if n, _ := vals[1].(int64); n == 0 { // nothing in the range
				next, ok := vals[2].(int64)
				if !ok || next <= int64(end) { // nothing logged up to upTo any more
					return fn(upTo, nil)
				}
				end = uint64(next) - 1
			}
			list, _ := vals[0].(string)
			if keys, err = parseKeyArray(list, keys[:0]); err != nil {
				return err
			}
			if err := fn(end, keys); err != nil {
				return err
			}
			after = end
			limit = min(uint64(logChunk), 2*limit)
			if err := ctx.Err(); err != nil {
				return context.Cause(ctx)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read log of %s: %w", s.Table, err)
	}
	return nil
}

// logSQL reads a chunk of the log, the entries with ?1 < seq <= ?2, in
// the order of seq (the table's rowid, which SQLite walks in order for a
// range of it; json_group_array keeps the order of its rows): the
// text keys (with nonASCII, those holding a character outside ASCII) as a
// JSON array, how many entries the range holds, and the first sequence
// number after it, up to ?3 (NULL: none).
func (s *Source) logSQL(nonASCII bool) string {
	filter := `typeof(key) = 'text'`
	if nonASCII {
		filter += ` AND key GLOB '*[^` + "\x01-\x7f" + `]*'`
	}
	return `SELECT json_group_array(key) FILTER (WHERE ` + filter + `), count(*),
		(SELECT min(seq) FROM ` + s.Log + ` WHERE seq > ?2 AND seq <= ?3)
		FROM ` + s.Log + ` WHERE seq > ?1 AND seq <= ?2`
}

// oneEntry reads the first log entry after after.
func oneEntry(ctx context.Context, c *Conn, dc *sqlite3.SQLiteConn, s *Source, after, upTo uint64) (seq uint64, key string, text bool, err error) {
	st, err := c.prepared(dc, `SELECT seq, key FROM `+s.Log+` WHERE seq > ?1 AND seq <= ?2 ORDER BY seq LIMIT 1`)
	if err != nil {
		return 0, "", false, err
	}
	vals := make([]driver.Value, 2)
	if err := queryFirst(ctx, st, vals, []driver.NamedValue{{Ordinal: 1, Value: int64(after)}, {Ordinal: 2, Value: int64(upTo)}}); err != nil {
		return 0, "", false, err
	}
	n, _ := vals[0].(int64)
	key, text = vals[1].(string)
	return uint64(n), key, text, nil
}

// queryFirst runs a prepared statement and reads its first row.
func queryFirst(ctx context.Context, st driver.Stmt, dest []driver.Value, args []driver.NamedValue) error {
	rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := rows.Next(dest); err != nil {
		if err == io.EOF {
			return errNoRow
		}
		return err
	}
	return nil
}

// isASCII reports whether s holds only ASCII characters.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
