package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
)

// A probe is the one statement a call runs on its way to an answer. In one
// read of the database (one snapshot) it reads the schema cookie, the
// connection's data_version, the source's log head and row (Head), the
// tag of the log entry at the caller's mark (After), the log's tail after
// it when the tail is short enough, and which of the keys asked the source
// holds. A read transaction costs about as much as a lookup, so a call
// pays for one where a separate freshness check, head read, log read and
// confirmation would cost four.

// ProbeOptions say what a probe reads besides the cookie and the head.
type ProbeOptions struct {
	After    uint64   // the caller's mark: the tag of the entry there, and the tail after it
	Chunk    int      // the longest tail read (at most Knobs.LogChunk): a longer one is not read at all
	NonASCII bool     // read only the tail's keys that may be stored in another spelling
	Keys     []string // keys to confirm; empty: none
	// Spellings: the spellings table has rows; the keys Spelled reports
	// may be stored in another spelling are confirmed through it too.
	Spellings bool
	Spelled   func(key string) bool
	// Schema is the cookie the caller resolved the source at: a probe
	// that reads another confirms nothing.
	Schema int64
}

// Probe is what one probe read.
type Probe struct {
	Schema  int64 // the schema cookie
	Version int64 // the connection's data_version (0 on the app's pool)
	Head    Head  // logged sources
	// AfterTag is the tag of the entry at After, AfterFound whether there
	// is one.
	AfterTag   int64
	AfterFound bool
	// Tail: Logged holds the text keys logged after After, up to the
	// head, in order.
	Tail   bool
	Logged []string
	Found  []int // the positions in Keys of those the source holds
	// Confirmed: Found answers Keys. False when the keys were too many or
	// too long for one statement (confirm them with Confirm), or the
	// schema was not the caller's.
	Confirmed bool
}

// probeShape is one variant of the probe statement.
type probeShape struct {
	single    bool // one key to confirm, bound as itself
	confirm   bool // keys to confirm
	spellings bool // through the spellings table too
	nonASCII  bool // the tail's keys that may be stored in another spelling only
	noVersion bool // on the app's pool: its connections' data_version tells the library nothing
}

// probeSQL returns the probe statement of one variant. ?1 is the JSON
// array of keys to confirm (single: the key itself), ?2 the caller's
// mark, ?3 the longest tail read, ?4 the longest key read inside the
// tail's array (a tail holding a longer one is read with ReadLog), ?5 the
// positions of the keys to confirm through the spellings table too, ?6
// the caller's schema cookie.
func (s *Source) probeSQL(p probeShape) string {
	cols := `(SELECT schema_version FROM pragma_schema_version()), (SELECT data_version FROM pragma_data_version())`
	if p.noVersion {
		cols = `(SELECT schema_version FROM pragma_schema_version()), 0`
	}
	from := ""
	if s.Logged {
		f, log := logFilter(p.nonASCII), inMain(s.Log)
		cols += `, ` + s.headCols() + `, c.keys, c.long, (SELECT tag FROM ` + log + ` WHERE seq = ?2)`
		// A range of sequence numbers, read only if it reaches the head:
		// a LIMIT subquery runs as a co-routine costing ~10µs even on an
		// empty log.
		from = ` FROM ` + inMain(SourcesTable) + ` s, (SELECT json_group_array(key) FILTER (WHERE ` + f + ` AND octet_length(key) <= ?4) AS keys,
			count(*) FILTER (WHERE ` + f + ` AND octet_length(key) > ?4) AS long
			FROM ` + log + ` WHERE seq > ?2 AND seq <= ?2 + ?3 AND (SELECT max(seq) FROM ` + log + `) <= ?2 + ?3) c
			WHERE s.id = ` + strconv.FormatInt(s.ID, 10)
	}
	if p.confirm {
		cols += `, CASE WHEN (SELECT schema_version FROM pragma_schema_version()) = ?6 THEN (` +
			s.confirmSQL(p.spellings && s.Logged, p.single, "?1", "?5") + `) END`
	}
	return `SELECT ` + cols + from
}

// runner runs a statement and reads its first row: a library
// connection (Conn) or the app's pool (appRunner).
type runner interface {
	first(ctx context.Context, q string, dest []driver.Value, args ...driver.NamedValue) error
}

// Probe runs one probe on the connection.
func (c *Conn) Probe(ctx context.Context, s *Source, o ProbeOptions, out *Probe) error {
	return probe(ctx, c, c.db.knobs, s, o, out, true)
}

// AppProbe runs one probe on the app's pool (AppFree says whether it
// would wait).
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
		if p.confirm = fitsOne(o.Keys); p.confirm {
			list = keyArray(o.Keys)
			p.confirm = len(list) <= listBytes
		}
	}
	if !p.confirm {
		p.single = false
	} else if o.Spellings && s.Logged {
		sp = appendSpelled(nil, o.Keys, o.Spelled)
		p.spellings = sp != nil
	}
	q := s.queries().probeSQL(s, p)
	chunk := int64(max(0, min(o.Chunk, knobs.LogChunk)))
	// Every parameter up to the highest the statement names is bound
	// (NULL where unused): drivers count them up to the highest.
	top := 0
	switch {
	case p.confirm:
		top = 6
	case s.Logged:
		top = 4
	}
	args := make([]driver.NamedValue, top)
	for i := range args {
		args[i] = arg(i+1, nil)
	}
	if p.confirm {
		args[0].Value, args[5].Value = list, o.Schema
		if p.spellings {
			args[4] = spelledArg(5, p.single, sp)
		}
	}
	if s.Logged {
		args[1].Value, args[2].Value, args[3].Value = int64(o.After), chunk, int64(knobs.ShortKey)
	}
	var vals [2 + headValues + 3 + 1]driver.Value
	n := 2
	if s.Logged {
		n += headValues + 3
	}
	if p.confirm {
		n++
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
		out.AfterTag, out.AfterFound = vals[i+headValues+2].(int64)
		if long, _ := vals[i+headValues+1].(int64); long == 0 && out.Head.Seq <= o.After+uint64(chunk) {
			list, _ := vals[i+headValues].(string)
			if out.Logged, err = parseKeyArray(list, out.Logged); err != nil {
				return fmt.Errorf("probe %s: read log: %w", s.Table, err)
			}
			out.Tail = true
		}
		i += headValues + 3
	}
	if p.confirm {
		if out.Schema != o.Schema {
			out.Confirmed = false // the caller's view is out of date
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
