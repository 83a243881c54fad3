package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Head is the state of a source's log, read in one statement.
//
// Every log entry carries a random 64-bit tag, set by its trigger:
// sequence numbers are rowids, which a backup restored in place gives out
// again, so a filter that remembers the tag of the last entry it read
// knows with one lookup whether the log still holds what it read.
type Head struct {
	Seq          uint64 // the newest log entry: the source's generation
	Tag          int64  // the tag of the entry at Seq (0: the log is empty)
	Floor        uint64 // entries below may have been deleted (Compact); the one at Floor, if any, is kept
	Epoch        uint64 // moves on when the source is attached again
	SpellingsGen uint64 // with Scanned: the spellings table holds every stored non-NFC spelling logged up to here
	Scanned      bool   // a full scan completed in this epoch
	HasSpellings bool   // the spellings table has a row
}

// headCols are the values readHead reads, in its order; s is the
// source's row. They come back as one text column (textCols): a driver's
// cost is per column, about 0.3 µs each with mattn. A value of the row or
// the log that is no integer (an edit) makes the text one readInts
// refuses: NULL, or 'x' for the newest entry's tag.
func (s *Source) headCols() []string {
	log := inMain(s.Log)
	row := func(col string) string { return `CASE typeof(s.` + col + `) WHEN 'integer' THEN s.` + col + ` END` }
	return []string{row("log_floor"), row("epoch"), row("spellings_gen"), row("scanned"),
		`EXISTS (SELECT 1 FROM ` + inMain(s.Spellings) + `)`,
		// The newest entry's sequence number and tag, in one seek.
		`coalesce((SELECT seq || ' ' || ` + intTag + `'x' END FROM ` + log + ` ORDER BY seq DESC LIMIT 1), '0 0')`}
}

// intTag begins the CASE that is a log entry's tag if it is an integer,
// else what follows it.
const intTag = `CASE typeof(tag) WHEN 'integer' THEN tag ELSE `

const headValues = 7 // values in headCols (the last two in one)

// textCols is one text column of the values of exprs, each followed by a
// space but the last, joined by || (an operator: no function an app may
// define in its place). A NULL makes it NULL.
func textCols(exprs ...string) string {
	return "(" + strings.Join(exprs, ") || ' ' || (") + ")"
}

func (s *Source) headSQL() string {
	return `SELECT ` + textCols(s.headCols()...) + ` FROM ` + inMain(SourcesTable) + ` s WHERE s.id = ` + strconv.FormatInt(s.ID, 10)
}

// readHead reads the head from the integers of headCols.
func readHead(n []int64) (Head, error) {
	for i, x := range n[:headValues] {
		if x < 0 && i < headValues-1 { // the tag may be negative
			return Head{}, fmt.Errorf("unexpected value %d", x)
		}
	}
	return Head{Floor: uint64(n[0]), Epoch: uint64(n[1]), SpellingsGen: uint64(n[2]),
		Scanned: n[3] != 0, HasSpellings: n[4] != 0, Seq: uint64(n[5]), Tag: n[6]}, nil
}

// readInts reads len(n) integers from the start of v (text), each
// followed by one space; rest is what follows the last one's space ("" if
// the text ends with it).
func readInts(v driver.Value, n []int64) (rest string, err error) {
	s := textValue(v)
	for i := range n {
		end := strings.IndexByte(s, ' ')
		if end < 0 {
			end = len(s)
		}
		if n[i], err = strconv.ParseInt(s[:end], 10, 64); err != nil {
			return "", fmt.Errorf("unexpected value %q (number %d of %q)", s[:end], i+1, textValue(v))
		}
		s = s[min(end+1, len(s)):]
	}
	return s, nil
}

// Head reads the source's log head.
func (c *Conn) Head(ctx context.Context, s *Source) (Head, error) {
	var v [1]driver.Value
	err := c.first(ctx, s.sql(headStmt{}), v[:])
	if errors.Is(err, errNoRow) {
		err = ErrNotAttached
	}
	h := Head{}
	var n [headValues]int64
	if err == nil {
		var rest string
		if rest, err = readInts(v[0], n[:]); err == nil && rest != "" {
			err = fmt.Errorf("unexpected value %q", textValue(v[0]))
		}
		if err == nil {
			h, err = readHead(n[:])
		}
	}
	if err != nil {
		return Head{}, fmt.Errorf("read log head of %s: %w", s.Table, err)
	}
	return h, nil
}

// A key longer than MaxKeyBytes cannot be asked about, but NFC may compose
// up to three bytes of a stored spelling into one (Hangul jamo), so stored
// keys of up to MaxStoredBytes are read; a longer one (octet_length: the
// database stores UTF-8, checkEncoding) stands for no key and is never read.
const (
	MaxKeyBytes    = 64 << 10
	MaxStoredBytes = 3 * MaxKeyBytes
)

// nonASCIIKey is true for a text key with a character outside ASCII or a
// NUL, the only keys that may be stored in a spelling other than NFC:
// length() stops at the first NUL and counts characters, octet_length()
// counts every byte (a GLOB would stop at a NUL too).
func (s *Source) nonASCIIKey(col string) string {
	return `length(` + col + `) <> ` + s.octets(col)
}

// ReadLog hands fn the text keys logged with after < seq <= upTo (only
// those nonASCIIKey selects, with nonASCII), a chunk at a time, each with
// the seq it reads up to. BLOB keys and keys longer than MaxStoredBytes
// are skipped; keys longer than Knobs.ShortKey are read one by one after
// their chunk. A chunk is a range of seq, not ORDER BY seq LIMIT n (a
// co-routine costing as much again); an empty one says where to jump.
func (c *Conn) ReadLog(ctx context.Context, s *Source, after, upTo uint64, nonASCII bool, fn func(read uint64, keys []string) error) error {
	q, long := s.logSQL(nonASCII), s.longLogSQL(nonASCII)
	short := int64(c.db.knobs.ShortKey)
	vals := make([]driver.Value, 4)
	var keys []string
	for after < upTo {
		end := after + min(uint64(c.db.knobs.LogChunk), upTo-after)
		err := c.first(ctx, q, vals, arg(1, int64(after)), arg(2, int64(end)), arg(3, int64(upTo)), arg(4, short))
		if err != nil {
			return fmt.Errorf("read log of %s: %w", s.Table, err)
		}
		if n, _ := vals[1].(int64); n == 0 { // nothing in the range
			next, ok := vals[3].(int64)
			if !ok || next <= int64(end) { // nothing logged up to upTo any more
				return fn(upTo, nil)
			}
			end = uint64(next) - 1
		}
		keys, err = s.parseKeys(vals[0], keys[:0])
		if n, _ := vals[2].(int64); n > 0 && err == nil {
			err = c.eachKey(ctx, s, long, func(k string, _ bool) error {
				keys = append(keys, k)
				return nil
			}, arg(1, int64(after)), arg(2, int64(end)), arg(3, short))
		}
		if err != nil {
			return fmt.Errorf("read log of %s: %w", s.Table, err)
		}
		if err := fn(end, keys); err != nil {
			return err
		}
		after = end
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
	}
	return nil
}

// arg is the ordinal-th parameter of a statement.
func arg(ordinal int, v any) driver.NamedValue { return driver.NamedValue{Ordinal: ordinal, Value: v} }

// logFilter is the condition on a log entry worth reading.
func (s *Source) logFilter(nonASCII bool) string {
	f := `typeof(key) = 'text' AND ` + s.octets("key") + ` <= ` + strconv.Itoa(MaxStoredBytes)
	if nonASCII {
		f += ` AND ` + s.nonASCIIKey("key")
	}
	return f
}

// logSQL reads the entries with ?1 < seq <= ?2 in order: the keys worth
// reading of at most ?4 bytes as one list (dialect.go), how many entries, how many
// longer keys worth reading, and the first seq after ?2 up to ?3.
func (s *Source) logSQL(nonASCII bool) string {
	f := s.logFilter(nonASCII)
	return `SELECT ` + s.groupKeys("key", f+` AND `+s.octets("key")+` <= ?4`) + `, count(*),
		count(*) FILTER (WHERE ` + f + ` AND ` + s.octets("key") + ` > ?4),
		(SELECT min(seq) FROM ` + s.Log + ` WHERE seq > ?2 AND seq <= ?3)
		FROM ` + s.Log + ` WHERE seq > ?1 AND seq <= ?2`
}

// longLogSQL reads the keys worth reading of more than ?3 bytes logged
// with ?1 < seq <= ?2, one row each.
func (s *Source) longLogSQL(nonASCII bool) string {
	return `SELECT ` + s.quote("key") + ` FROM ` + s.Log + ` WHERE seq > ?1 AND seq <= ?2 AND ` + s.logFilter(nonASCII) + ` AND ` + s.octets("key") + ` > ?3`
}

// TagAt returns the tag of the log entry at seq (0 if there is none).
func (c *Conn) TagAt(ctx context.Context, s *Source, seq uint64) (int64, error) {
	tag, err := firstInt(ctx, c, `SELECT coalesce((SELECT tag FROM `+s.Log+` WHERE seq = ?1), 0)`, arg(1, int64(seq)))
	if err != nil {
		return 0, fmt.Errorf("read log tag of %s: %w", s.Table, err)
	}
	return tag, nil
}

// Compact deletes log entries below upTo and raises the floor (an older
// filter must rebuild), but keeps the entry at the floor (Head.Tag), those
// a live lease holds or the spellings table does not cover, the newest
// (without AUTOINCREMENT, a new row is numbered one past the largest), and
// everything before a full scan of the epoch completed.
func (db *DB) Compact(ctx context.Context, s *Source, upTo uint64) error {
	return db.update(ctx, "compact log", func(tx *Tx) error {
		var held sql.NullInt64
		var spellingsGen int64
		var scanned bool
		err := tx.QueryRowContext(ctx, `SELECT (SELECT min(generation) FROM `+ScansTable+` WHERE source = ?1 AND expires >= ?2),
		spellings_gen, scanned FROM `+SourcesTable+` WHERE id = ?1`, s.ID, time.Now().Unix()).Scan(&held, &spellingsGen, &scanned)
		if err != nil || !scanned {
			return err
		}
		if held.Valid && uint64(held.Int64) < upTo {
			upTo = uint64(held.Int64)
		}
		upTo = min(upTo, uint64(spellingsGen))
		err = tx.exec(`UPDATE `+SourcesTable+` SET log_floor = max(log_floor, ?) WHERE id = ?`, int64(upTo), s.ID)
		if err == nil {
			err = tx.exec(`DELETE FROM `+s.Log+` WHERE seq < ? AND seq < (SELECT max(seq) FROM `+s.Log+`)`, int64(upTo))
		}
		if err == nil {
			err = tx.exec(`DELETE FROM ` + s.Spellings + ` WHERE NOT EXISTS (SELECT 1 FROM ` + s.QTable + ` t WHERE t.` + s.QCol + ` = stored)`)
		}
		return err
	})
}
