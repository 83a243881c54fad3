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
//   - the tag of the log entry at the caller's generation (Head.Tag), so
//     that the caller knows the log still holds what it read;
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
	After uint64 // read the log after this generation (logged sources), and the tag of the entry at it
	Check uint64 // read the tag of the entry at this generation too
	// Chunk is how many log entries after After to read (at most
	// Knobs.LogChunk; 0: none). With Whole, they are read only if they
	// reach the head: the caller takes the whole tail or nothing.
	Chunk    int
	Whole    bool
	NonASCII bool     // only the log's keys that may be stored in another spelling (no filter to feed)
	Keys     []string // keys to confirm; empty: none
	// Spellings: the spellings table has rows; the keys Spelled reports
	// may be stored in another spelling are confirmed through it too.
	Spellings bool
	Spelled   func(key string) bool
	// With Whole, when the tail after After does not fit in Chunk: the
	// entries that may be stored spellings among the next Else entries
	// are read instead (Probe.NonASCIIOnly).
	Else int
	// Schema is the schema cookie the caller resolved the source at: a
	// probe that reads another confirms nothing.
	Schema int64
}

// Probe is what one probe read.
type Probe struct {
	Schema  int64 // the schema cookie
	Version int64 // the connection's data_version in the probe's read (Conn.Probe; 0 on the app's pool)
	Head    Head  // logged sources
	// AfterTag and CheckTag are the tags of the log entries at After and
	// Check (logged sources), AfterFound and CheckFound whether there are
	// such entries.
	AfterTag, CheckTag     int64
	AfterFound, CheckFound bool
	Logged                 []string // text keys logged after After, in order: the first chunk (up to Knobs.LogChunk entries)
	Read                   uint64   // the log read up to here (After if nothing): Read < Head.Seq means more to read
	// NonASCIIOnly: Logged holds only the entries up to Read that may be
	// stored spellings (ProbeOptions.Else): spellings may take them, a
	// filter may not.
	NonASCIIOnly bool
	Found        []int // the positions in Keys of those the source holds (as asked, or through the spellings table)
	// Confirmed: Found answers Keys. False when the keys were too many or
	// too long for one statement: confirm them with Confirm.
	Confirmed bool
}

// probeShape is one variant of the probe statement.
type probeShape struct {
	single    bool // one key to confirm, bound as itself
	confirm   bool // keys to confirm
	spellings bool // through the spellings table too
	nonASCII  bool // the log's keys that may be stored in another spelling only
	noVersion bool // on the app's pool: its connections' data_version tells the library nothing
}

// probeSQL returns the probe statement of one variant. ?1 is the JSON
// array of keys to confirm (single: the one key itself), ?2 the
// generation to read the log after, ?3 the chunk's length, ?4 the longest
// key read inside the chunk's array (a chunk holding a longer one reports
// it, the long count, and the caller reads the log with ReadLog), ?5 the
// generation whose tag is checked too, ?6 1 when the chunk is read only
// if it reaches the head, ?7 the positions of the keys to confirm through
// the spellings table too, ?8 how far to read the entries that may be
// stored spellings when the tail does not fit, ?9 the schema cookie the
// caller resolved the source at: a probe that finds another confirms
// nothing (the caller resolves the source again and asks again), rather
// than confirm keys for a view it discards.
func (s *Source) probeSQL(p probeShape) string {
	const sameSchema = `(SELECT schema_version FROM pragma_schema_version()) = ?9`
	cols := `(SELECT schema_version FROM pragma_schema_version()), (SELECT data_version FROM pragma_data_version())`
	if p.noVersion {
		cols = `(SELECT schema_version FROM pragma_schema_version()), 0`
	}
	from := ""
	if s.Logged {
		f, log := logFilter(p.nonASCII), inMain(s.Log)
		cols += `, ` + s.headCols() + `, c.keys, c.long, (SELECT tag FROM ` + log + ` WHERE seq = ?2), (SELECT tag FROM ` + log + ` WHERE seq = ?5)`
		// The chunk is a range of sequence numbers, not "ORDER BY seq
		// LIMIT n": SQLite runs a LIMIT subquery as a co-routine that
		// costs ~10µs even when the log is empty, most of a call's
		// probe. Whatever seq numbers the range holds, every entry in
		// it is read: Probe reports the range's end (bounded by the
		// head) as read, so a gap cannot stall a caller. The head is an
		// uncorrelated subquery: SQLite reads it once.
		fits := `(SELECT max(seq) FROM ` + log + `) <= ?2 + ?3`
		from = ` FROM ` + inMain(SourcesTable) + ` s, (SELECT json_group_array(key) FILTER (WHERE ` + f + ` AND octet_length(key) <= ?4) AS keys,
			count(*) FILTER (WHERE ` + f + ` AND octet_length(key) > ?4) AS long
			FROM ` + log + ` WHERE seq > ?2 AND seq <= ?2 + max(?3, ?8)
				AND (?6 = 0 OR ` + fits + ` OR seq <= ?2 + ?8 AND ` + nonASCIIKey("key") + `)) c
			WHERE s.id = ` + strconv.FormatInt(s.ID, 10)
	}
	if p.confirm {
		cols += `, CASE WHEN ` + sameSchema + ` THEN (` + s.confirmSQL(p.spellings && s.Logged, p.single, "?1", "?7") + `) END`
	}
	return `SELECT ` + cols + from
}

// runner runs a statement and reads its first row: a library
// connection (Conn) or the app's pool (appRunner).
type runner interface {
	first(ctx context.Context, q string, dest []driver.Value, args ...driver.NamedValue) error
}

// Probe runs one probe (see the top of this file) on the connection.
func (c *Conn) Probe(ctx context.Context, s *Source, o ProbeOptions, out *Probe) error {
	return probe(ctx, c, c.db.knobs, s, o, out, true)
}

// AppProbe runs one probe on the app's pool (Options.App; AppFree says
// whether it would wait).
func (db *DB) AppProbe(ctx context.Context, s *Source, o ProbeOptions, out *Probe) error {
	return probe(ctx, db.app, db.knobs, s, o, out, false)
}

func probe(ctx context.Context, r runner, knobs Knobs, s *Source, o ProbeOptions, out *Probe, version bool) error {
	p := probeShape{confirm: len(o.Keys) > 0, single: len(o.Keys) == 1, nonASCII: o.NonASCII, noVersion: !version}
	list := "[]"
	var sp []byte
	switch {
	case p.single:
		list = o.Keys[0]
	case p.confirm:
		p.confirm = fitsOne(o.Keys)
		if p.confirm {
			list = keyArray(o.Keys)
			p.confirm = len(list) <= listBytes
		}
		// else Confirm, in several statements
	}
	spellings := o.Spellings && s.Logged
	if !p.confirm {
		p.single = false
	} else if spellings {
		sp = appendSpelled(nil, o.Keys, o.Spelled)
		p.spellings = sp != nil
	}
	q := s.queries().probeSQL(s, p)
	var vals [2 + headValues + 4 + 1]driver.Value
	n := 2
	if s.Logged {
		n += headValues + 4
	}
	if p.confirm {
		n++
	}
	chunk := uint64(max(0, min(o.Chunk, knobs.LogChunk)))
	var elseChunk uint64
	if o.Whole {
		elseChunk = uint64(max(0, min(o.Else, knobs.LogChunk)))
	}
	// Every parameter up to the highest the statement names is bound
	// (NULL where unused): drivers count them up to the highest.
	top := 0
	switch {
	case p.confirm:
		top = 9
	case s.Logged:
		top = 8
	}
	args := make([]driver.NamedValue, top)
	for i := range args {
		args[i] = arg(i+1, nil)
	}
	set := func(n int, v any) { args[n-1].Value = v }
	if p.confirm {
		set(1, list)
		if p.spellings {
			args[6] = spelledArg(7, p.single, sp)
		}
	}
	if s.Logged {
		set(2, int64(o.After))
		set(3, int64(chunk))
		set(4, int64(knobs.ShortKey))
		set(5, int64(o.Check))
		set(6, int64(b2i(o.Whole)))
		set(8, int64(elseChunk))
	}
	if top == 9 {
		set(9, o.Schema)
	}
	if err := r.first(ctx, q, vals[:n], args...); err != nil {
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
		out.AfterTag, out.AfterFound = vals[i+headValues+2].(int64)
		out.CheckTag, out.CheckFound = vals[i+headValues+3].(int64)
		end, fits := o.After+chunk, !o.Whole || out.Head.Seq <= o.After+chunk
		if !fits && elseChunk > 0 {
			end, out.NonASCIIOnly = o.After+elseChunk, true
		}
		if long, _ := vals[i+headValues+1].(int64); long == 0 && (fits || out.NonASCIIOnly) { // else the chunk is read with ReadLog
			list, _ := vals[i+headValues].(string)
			if out.Logged, err = parseKeyArray(list, out.Logged); err != nil {
				return fmt.Errorf("probe %s: read log: %w", s.Table, err)
			}
			if out.Head.Seq > o.After {
				out.Read = min(end, out.Head.Seq)
			}
		} else {
			out.NonASCIIOnly = false
		}
		i += headValues + 4
	}
	if p.confirm {
		if out.Schema != o.Schema {
			out.Confirmed = false // not asked: the caller's view is out of date
			return nil
		}
		list, _ := vals[i].(string)
		var err error
		if out.Found, err = parsePositions(list, 0, len(o.Keys), out.Found); err != nil {
			return fmt.Errorf("probe %s: read found keys: %w", s.Table, err)
		}
	}
	return nil
}
