package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
)

// Head is the state of a source's log, read in one statement.
type Head struct {
	Seq          uint64 // the newest log entry: the source's generation
	Tag          int64  // the random tag of the entry at Seq (0: the log is empty)
	Floor        uint64 // entries below may have been deleted (compaction); the one at Floor, if any, is kept
	Epoch        uint64 // moves on when the source is attached again
	SpellingsGen uint64 // with Scanned: the spellings table holds every stored non-NFC spelling logged up to here
	Scanned      bool   // a full scan completed in this epoch
	HasSpellings bool   // the spellings table has a row
}

// Every log entry carries a random 64-bit tag, set by the trigger that
// writes it. Sequence numbers are the table's rowids, which a backup
// restored into the database in place gives out again: an entry a filter
// read and the entry at the same number after a restore differ by their
// tags (but for one chance in 2^64). A filter that remembers the tag of
// the last entry it read knows, with one lookup, whether the log still
// holds what it read (Probe.AfterTag).

// headCols are the columns that read a Head, in readHead's order; s is
// the source's row of SourcesTable.
func (s *Source) headCols() string {
	log := inMain(s.Log)
	return `coalesce((SELECT max(seq) FROM ` + log + `), 0), s.log_floor, s.epoch, s.spellings_gen, s.scanned,
		EXISTS (SELECT 1 FROM ` + inMain(s.Spellings) + `), coalesce((SELECT tag FROM ` + log + ` WHERE seq = (SELECT max(seq) FROM ` + log + `)), 0)`
}

// headValues is how many values headCols reads.
const headValues = 7

// headSQL reads the source's Head.
func (s *Source) headSQL() string {
	return `SELECT ` + s.headCols() + ` FROM ` + inMain(SourcesTable) + ` s WHERE s.id = ` + strconv.FormatInt(s.ID, 10)
}

// readHead reads the values of headCols.
func readHead(vals []driver.Value) (Head, error) {
	var n [headValues - 1]int64
	for i := range n {
		x, ok := vals[i].(int64)
		if !ok || x < 0 {
			return Head{}, fmt.Errorf("unexpected value %v", vals[i])
		}
		n[i] = x
	}
	tag, ok := vals[headValues-1].(int64)
	if !ok {
		return Head{}, fmt.Errorf("unexpected tag %v", vals[headValues-1])
	}
	return Head{Seq: uint64(n[0]), Tag: tag, Floor: uint64(n[1]), Epoch: uint64(n[2]), SpellingsGen: uint64(n[3]), Scanned: n[4] != 0, HasSpellings: n[5] != 0}, nil
}

// Head reads the source's log head.
func (c *Conn) Head(ctx context.Context, s *Source) (Head, error) {
	var v [headValues]driver.Value
	if err := c.first(ctx, s.queries().head, v[:]); err != nil {
		if errors.Is(err, errNoRow) {
			return Head{}, fmt.Errorf("read log head of %s: %w", s.Table, ErrNotAttached)
		}
		return Head{}, fmt.Errorf("read log head of %s: %w", s.Table, err)
	}
	h, err := readHead(v[:])
	if err != nil {
		return Head{}, fmt.Errorf("read log head of %s: %w", s.Table, err)
	}
	return h, nil
}

// A key longer than MaxKeyBytes cannot be asked about, but a stored
// spelling may be longer than the canonical key it stands for: NFC
// composes up to three UTF-8 bytes into one character (Hangul: three
// jamo of 3 bytes into a syllable of 3), so stored keys of up to
// MaxStoredBytes are read and normalized; a longer one (octet_length:
// the database stores UTF-8, checkEncoding) is certainly too long, and is
// never read.
const (
	MaxKeyBytes    = 64 << 10
	MaxStoredBytes = 3 * MaxKeyBytes
	tooLong        = MaxStoredBytes
)

// nonASCIIKey is true for a text key that holds a character outside
// ASCII (or a NUL): only such a key can be stored in a spelling other
// than its NFC form. length() counts characters up to the first NUL,
// octet_length() every byte, so they differ for every key with a
// multi-byte character or a NUL anywhere. (GLOB '*[^\x01-\x7f]*' would
// stop at a NUL, as every C string function does.)
func nonASCIIKey(col string) string {
	return `length(` + col + `) <> octet_length(` + col + `)`
}

// ReadLog hands the text keys logged with after < seq <= upTo to fn, in
// chunks: one statement and one JSON array per chunk instead of a driver
// call and a string per entry. With nonASCII, only keys that may be stored
// in a spelling other than NFC are read (nonASCIIKey), SQLite skipping the
// others. Keys logged as BLOB (never equal to a text id) and keys too long
// to stand for any key (longer than MaxStoredBytes) are skipped.
//
// A chunk is a range of sequence numbers, not "ORDER BY seq LIMIT n",
// which SQLite runs as a co-routine that costs about as much again as
// reading the entries. Sequence numbers have gaps only where entries were
// deleted (compaction, or by hand): an empty range says where the next
// entry is, and the read jumps there.
//
// Memory stays bounded whatever the keys' lengths: a chunk's JSON array
// holds only keys of at most Knobs.ShortKey bytes; longer ones (rare) are
// read one by one after it.
//
// fn gets each chunk with the sequence number it reads up to.
func (c *Conn) ReadLog(ctx context.Context, s *Source, after, upTo uint64, nonASCII bool, fn func(read uint64, keys []string) error) error {
	q, long := s.queries().log[b2i(nonASCII)], s.queries().longLog[b2i(nonASCII)]
	short := int64(c.db.knobs.ShortKey)
	var (
		vals = make([]driver.Value, 4)
		keys []string
	)
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
		list, _ := vals[0].(string)
		if keys, err = parseKeyArray(list, keys[:0]); err != nil {
			return fmt.Errorf("read log of %s: %w", s.Table, err)
		}
		if n, _ := vals[2].(int64); n > 0 {
			if keys, err = c.readLong(ctx, long, keys, arg(1, int64(after)), arg(2, int64(end)), arg(3, short)); err != nil {
				return fmt.Errorf("read log of %s: %w", s.Table, err)
			}
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

// readLong appends the keys q returns one by one, each a JSON string
// (json_quote).
func (c *Conn) readLong(ctx context.Context, q string, keys []string, args ...driver.NamedValue) ([]string, error) {
	dest := make([]driver.Value, 1)
	err := c.each(ctx, q, dest, func() error {
		s, _ := dest[0].(string)
		k, err := parseString(s)
		if err != nil {
			return err
		}
		keys = append(keys, k)
		return nil
	}, args...)
	return keys, err
}

// arg is the ordinal-th parameter of a statement.
func arg(ordinal int, v any) driver.NamedValue { return driver.NamedValue{Ordinal: ordinal, Value: v} }

// logFilter is the condition on a log entry worth reading.
func logFilter(nonASCII bool) string {
	f := `typeof(key) = 'text' AND octet_length(key) <= ` + strconv.Itoa(tooLong)
	if nonASCII {
		f += ` AND ` + nonASCIIKey("key")
	}
	return f
}

// logSQL reads a chunk of the log, the entries with ?1 < seq <= ?2, in
// the order of seq (the table's rowid, which SQLite walks in order for a
// range of it; json_group_array keeps the order of its rows): the text
// keys of at most ?4 bytes worth reading (logFilter) as a JSON array, how
// many entries the range holds, how many longer keys worth reading it
// holds (longLogSQL reads them), and the first sequence number after it,
// up to ?3 (NULL: none).
func (s *Source) logSQL(nonASCII bool) string {
	f := logFilter(nonASCII)
	return `SELECT json_group_array(key) FILTER (WHERE ` + f + ` AND octet_length(key) <= ?4), count(*),
		count(*) FILTER (WHERE ` + f + ` AND octet_length(key) > ?4),
		(SELECT min(seq) FROM ` + s.Log + ` WHERE seq > ?2 AND seq <= ?3)
		FROM ` + s.Log + ` WHERE seq > ?1 AND seq <= ?2`
}

// longLogSQL reads, one row each, the keys worth reading of more than ?3
// bytes logged with ?1 < seq <= ?2.
func (s *Source) longLogSQL(nonASCII bool) string {
	return `SELECT json_quote(key) FROM ` + s.Log + ` WHERE seq > ?1 AND seq <= ?2 AND ` + logFilter(nonASCII) + ` AND octet_length(key) > ?3`
}

// TagAt returns the tag of the log entry at seq (0 if there is none).
func (c *Conn) TagAt(ctx context.Context, s *Source, seq uint64) (int64, error) {
	var vals [1]driver.Value
	err := c.first(ctx, `SELECT coalesce((SELECT tag FROM `+s.Log+` WHERE seq = ?1), 0)`, vals[:], arg(1, int64(seq)))
	if err != nil {
		return 0, fmt.Errorf("read log tag of %s: %w", s.Table, err)
	}
	tag, _ := vals[0].(int64)
	return tag, nil
}
