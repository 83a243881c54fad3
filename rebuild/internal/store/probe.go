package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"

	"github.com/mattn/go-sqlite3"
)

// A probe is the one statement a call runs on its way to an answer. In one
// read of the database (one snapshot) it reads:
//
//   - the schema cookie (PRAGMA schema_version): the caller compares it
//     with the one its Source was resolved at, and resolves again after
//     any DDL before trusting anything else;
//   - the connection's data_version: while a later PRAGMA data_version on
//     the same connection (Version) reads the same value, no connection
//     of any process committed since, and what the probe told still holds;
//   - the source's log head and row (Head), when the source is logged;
//   - the first chunk of the log after the caller's generation, so that a
//     filter a little behind catches up without a second statement;
//   - optionally, which of a list of keys the source holds (Confirm's
//     statement, inlined).
//
// A read transaction costs about as much as a lookup (locks, the file's
// header), so a call pays for one where a separate freshness check, head
// read, log read and confirmation cost four.

// ProbeOptions say what a probe reads besides the cookie.
type ProbeOptions struct {
	After    uint64   // read the log after this generation (logged sources)
	NonASCII bool     // only the log's keys that may be stored in another spelling (no filter to feed)
	Keys     []string // keys to confirm; empty: none
	Aliases  bool     // confirm through the alias table too
}

// Probe is what one probe read.
type Probe struct {
	Schema  int64    // the schema cookie
	Version int64    // the connection's data_version in the probe's read
	Head    Head     // logged sources
	Logged  []string // text keys logged after After, in order: the first chunk (up to logChunk entries)
	Read    uint64   // the log read up to here (After if nothing): Read < Head.Seq means more to read
	Found   []string // of Keys, those the source holds (as stored, or as asked through the alias table)
	// Confirmed: Found answers Keys. False when the keys were too many or
	// too long for one statement: confirm them with Confirm.
	Confirmed bool
}

// probeSQL returns the probe statement of one variant. ?1 is the JSON
// array of keys to confirm (single: the one key itself), ?2 the
// generation to read the log after, ?3 the chunk's length.
func (s *Source) probeSQL(single, confirm, aliases, nonASCII bool) string {
	cols := `(SELECT schema_version FROM pragma_schema_version()), (SELECT data_version FROM pragma_data_version())`
	from := ""
	if s.Logged {
		filter := `typeof(key) = 'text'`
		if nonASCII {
			filter += ` AND key GLOB '*[^` + "\x01-\x7f" + `]*'`
		}
		epoch, aliasGen := "0", "s.log_floor"
		if s.cols.epoch {
			epoch = "s.epoch"
		}
		if s.cols.aliasGen {
			aliasGen = "s.alias_gen"
		}
		cols += `, coalesce((SELECT max(seq) FROM ` + s.Log + `), 0), s.log_floor, ` + epoch + `, ` + aliasGen + `, s.scanned,
			EXISTS (SELECT 1 FROM ` + s.Alias + `), c.keys`
		// The chunk is a range of sequence numbers, not "ORDER BY seq
		// LIMIT n": SQLite runs a LIMIT subquery as a co-routine that
		// costs ~10µs even when the log is empty, most of a call's
		// probe. Whatever seq numbers the range holds, every entry in
		// it is read: Probe reports the range's end (bounded by the
		// head) as read, so a gap cannot stall a caller.
		from = ` FROM ` + SourcesTable + ` s, (SELECT json_group_array(key) FILTER (WHERE ` + filter + `) AS keys
			FROM ` + s.Log + ` WHERE seq > ?2 AND seq <= ?2 + ?3) c WHERE s.id = ` + strconv.FormatInt(s.ID, 10)
	}
	if confirm {
		cols += `, (` + s.confirmSQL(aliases && s.Logged, single) + `)`
	}
	return `SELECT ` + cols + from
}

// probeStmt returns the statement of a variant, built once.
func (s *Source) probeStmt(single, confirm, aliases, nonASCII bool) string {
	q := s.queries()
	i := b2i(single)<<3 | b2i(confirm)<<2 | b2i(aliases)<<1 | b2i(nonASCII)
	return q.probe[i]
}

// Probe runs one probe (see the top of this file).
func (c *Conn) Probe(ctx context.Context, s *Source, o ProbeOptions, out *Probe) error {
	confirm, single := len(o.Keys) > 0, len(o.Keys) == 1
	list := "[]"
	switch {
	case single:
		list = o.Keys[0]
	case confirm:
		c.buf = appendKeyArray(c.buf[:0], o.Keys)
		if len(o.Keys) > confirmMax || len(c.buf) > listBytes {
			confirm = false // Confirm, in several statements
		} else {
			list = string(c.buf)
		}
	}
	q := s.probeStmt(single, confirm, o.Aliases, o.NonASCII)
	var vals [12]driver.Value
	n := 2
	if s.Logged {
		n += 7
	}
	if confirm {
		n++
	}
	var args [3]driver.NamedValue
	args[0] = driver.NamedValue{Ordinal: 1, Value: list}
	args[1] = driver.NamedValue{Ordinal: 2, Value: int64(o.After)}
	chunk := uint64(logChunk)
	args[2] = driver.NamedValue{Ordinal: 3, Value: int64(chunk)}
	nargs := 0
	switch {
	case s.Logged:
		nargs = 3
	case confirm:
		nargs = 1
	}
	err := c.first(ctx, q, vals[:n], args[:nargs]...)
	var se sqlite3.Error
	if s.Logged && errors.As(err, &se) && se.Code == sqlite3.ErrTooBig {
		// The chunk's keys are longer than a value may be here
		// (chunkBytes): probe without them; the caller reads the log
		// with ReadLog, which reads a long entry alone.
		chunk = 0
		args[2].Value = int64(0)
		err = c.first(ctx, q, vals[:n], args[:nargs]...)
	}
	if err != nil {
		if errors.Is(err, errNoRow) {
			return fmt.Errorf("probe %s: %w", s.Table, ErrNotAttached)
		}
		return fmt.Errorf("probe %s: %w", s.Table, err)
	}
	*out = Probe{Logged: out.Logged[:0], Found: out.Found[:0], Confirmed: confirm}
	var ok bool
	if out.Schema, ok = vals[0].(int64); !ok {
		return fmt.Errorf("probe %s: schema cookie %v", s.Table, vals[0])
	}
	if out.Version, ok = vals[1].(int64); !ok {
		return fmt.Errorf("probe %s: data version %v", s.Table, vals[1])
	}
	i := 2
	if s.Logged {
		var h [6]int64
		for j := range h {
			x, ok := vals[i+j].(int64)
			if !ok || x < 0 {
				return fmt.Errorf("probe %s: unexpected value %v", s.Table, vals[i+j])
			}
			h[j] = x
		}
		out.Head = Head{Seq: uint64(h[0]), Floor: uint64(h[1]), Epoch: uint64(h[2]), AliasGen: uint64(h[3]), Scanned: h[4] != 0, Aliases: h[5] != 0}
		list, _ := vals[i+6].(string)
		var err error
		if out.Logged, err = parseKeyArray(list, out.Logged); err != nil {
			return fmt.Errorf("probe %s: read log: %w", s.Table, err)
		}
		out.Read = o.After
		if out.Head.Seq > o.After {
			out.Read = min(o.After+chunk, out.Head.Seq)
		}
		i += 7
	}
	if confirm {
		list, _ := vals[i].(string)
		var err error
		if out.Found, err = parseKeyArray(list, out.Found); err != nil {
			return fmt.Errorf("probe %s: read found keys: %w", s.Table, err)
		}
	}
	return nil
}
