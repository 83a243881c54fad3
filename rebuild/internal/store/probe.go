package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
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
	Logged  []string // text keys logged after After, in order: the first chunk (up to Knobs.LogChunk entries)
	Read    uint64   // the log read up to here (After if nothing): Read < Head.Seq means more to read
	Found   []string // of Keys, those the source holds (as stored, or as asked through the alias table)
	// Confirmed: Found answers Keys. False when the keys were too many or
	// too long for one statement: confirm them with Confirm.
	Confirmed bool
}

// probeShape is one variant of the probe statement.
type probeShape struct {
	single   bool // one key to confirm, bound as itself
	confirm  bool // keys to confirm
	aliases  bool // through the alias table too
	nonASCII bool // the log's keys that may be stored in another spelling only
}

// probeSQL returns the probe statement of one variant. ?1 is the JSON
// array of keys to confirm (single: the one key itself), ?2 the
// generation to read the log after, ?3 the chunk's length, ?4 the longest
// key read inside the chunk's array: a chunk holding a longer one reports
// it (the long count), and the caller reads the log with ReadLog.
func (s *Source) probeSQL(p probeShape) string {
	cols := `(SELECT schema_version FROM pragma_schema_version()), (SELECT data_version FROM pragma_data_version())`
	from := ""
	if s.Logged {
		f := logFilter(p.nonASCII)
		cols += `, ` + s.headCols() + `, c.keys, c.long`
		// The chunk is a range of sequence numbers, not "ORDER BY seq
		// LIMIT n": SQLite runs a LIMIT subquery as a co-routine that
		// costs ~10µs even when the log is empty, most of a call's
		// probe. Whatever seq numbers the range holds, every entry in
		// it is read: Probe reports the range's end (bounded by the
		// head) as read, so a gap cannot stall a caller.
		from = ` FROM ` + SourcesTable + ` s, (SELECT json_group_array(key) FILTER (WHERE ` + f + ` AND octet_length(key) <= ?4) AS keys,
			count(*) FILTER (WHERE ` + f + ` AND octet_length(key) > ?4) AS long
			FROM ` + s.Log + ` WHERE seq > ?2 AND seq <= ?2 + ?3) c WHERE s.id = ` + strconv.FormatInt(s.ID, 10)
	}
	if p.confirm {
		cols += `, (` + s.confirmSQL(p.aliases && s.Logged, p.single) + `)`
	}
	return `SELECT ` + cols + from
}

// Probe runs one probe (see the top of this file).
func (c *Conn) Probe(ctx context.Context, s *Source, o ProbeOptions, out *Probe) error {
	p := probeShape{confirm: len(o.Keys) > 0, single: len(o.Keys) == 1, aliases: o.Aliases, nonASCII: o.NonASCII}
	list := "[]"
	switch {
	case p.single:
		list = o.Keys[0]
	case p.confirm:
		c.buf = appendKeyArray(c.buf[:0], o.Keys)
		if len(o.Keys) > confirmMax || len(c.buf) > listBytes {
			p.confirm = false // Confirm, in several statements
		} else {
			list = string(c.buf)
		}
	}
	if !p.confirm {
		p.single, p.aliases = false, false
	}
	q := s.queries().probe[p]
	var vals [11]driver.Value
	n := 2
	if s.Logged {
		n += 8
	}
	if p.confirm {
		n++
	}
	chunk := uint64(c.db.knobs.LogChunk)
	args := [4]driver.NamedValue{arg(1, list), arg(2, int64(o.After)), arg(3, int64(chunk)), arg(4, int64(c.db.knobs.ShortKey))}
	nargs := 0
	switch {
	case s.Logged:
		nargs = 4
	case p.confirm:
		nargs = 1
	}
	if err := c.first(ctx, q, vals[:n], args[:nargs]...); err != nil {
		if errors.Is(err, errNoRow) {
			return fmt.Errorf("probe %s: %w", s.Table, ErrNotAttached)
		}
		return fmt.Errorf("probe %s: %w", s.Table, err)
	}
	*out = Probe{Logged: out.Logged[:0], Found: out.Found[:0], Confirmed: p.confirm}
	var ok bool
	if out.Schema, ok = vals[0].(int64); !ok {
		return fmt.Errorf("probe %s: schema cookie %v", s.Table, vals[0])
	}
	if out.Version, ok = vals[1].(int64); !ok {
		return fmt.Errorf("probe %s: data version %v", s.Table, vals[1])
	}
	i := 2
	if s.Logged {
		var err error
		if out.Head, err = readHead(vals[i:]); err != nil {
			return fmt.Errorf("probe %s: %w", s.Table, err)
		}
		out.Read = o.After
		if long, _ := vals[i+7].(int64); long == 0 { // else the chunk is read with ReadLog
			list, _ := vals[i+6].(string)
			if out.Logged, err = parseKeyArray(list, out.Logged); err != nil {
				return fmt.Errorf("probe %s: read log: %w", s.Table, err)
			}
			if out.Head.Seq > o.After {
				out.Read = min(o.After+chunk, out.Head.Seq)
			}
		}
		i += 8
	}
	if p.confirm {
		list, _ := vals[i].(string)
		var err error
		if out.Found, err = parseKeyArray(list, out.Found); err != nil {
			return fmt.Errorf("probe %s: read found keys: %w", s.Table, err)
		}
	}
	return nil
}
