package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
)

// ProbeOptions say what a probe reads besides the cookie and the head.
type ProbeOptions struct {
	After     uint64   // the caller's mark: the tag of the entry there, and the tail after it
	Chunk     int      // the longest tail read (at most Knobs.LogChunk); a longer one is not read
	NonASCII  bool     // read only the tail's keys that may be stored in another spelling
	Keys      []string // keys to confirm
	Versions  []any    // with Keys, their versions (int64 or string): confirmed as Confirm does with them; nil: by key
	Spellings bool     // the spellings table has rows: confirm through it the keys Spelled reports
	Spelled   func(key string) bool
	Schema    int64 // the cookie the caller resolved the source at: with another, nothing is confirmed
}

// Probe is what one probe read. Confirmed: Found answers Keys (not when
// they were too many or too long for one statement, or the schema moved).
type Probe struct {
	Schema     int64 // the schema cookie
	Head       Head  // logged sources
	AfterTag   int64 // the tag of the entry at After, if AfterFound
	AfterFound bool
	Tail       bool // Logged holds the text keys logged after After, up to the head
	Logged     []string
	Found      []int // the positions in Keys of those the source holds
	Older      []int // with Versions, those of Found whose rows hold only older or NULL versions
	Confirmed  bool
}

// probeShape is one variant of the probe statement.
type probeShape struct {
	single    bool // one key to confirm, bound as itself
	confirm   bool // keys to confirm
	spellings bool // through the spellings table too
	nonASCII  bool // the tail's keys that may be stored in another spelling only
	versioned bool // keys with versions (versionsSQL)
	size      int  // plain: the keys bound, from ?7 on
}

// probeSQL is the one statement a call runs on its way to an answer: one
// read transaction (about the cost of a lookup) instead of four. ?1 the
// keys (single: the key), ?2 the caller's mark, ?3 the longest tail read,
// ?4 the longest key read in the tail's array (else ReadLog reads it), ?5
// the positions to confirm through spellings, ?6 the caller's cookie;
// plain, the keys from ?7 on.
func (s *Source) probeSQL(p probeShape) string {
	// The cookie is read once, as a table: the confirmation's guard uses
	// the same value.
	cols, from := `ck.schema_version`, ` FROM pragma_schema_version() ck`
	if s.Logged {
		// One text column (textCols, read by readInts): the cookie, the
		// head, how many keys of the tail were too long, the tag at the
		// mark ("" if none); then the tail's keys.
		f, log := s.logFilter(p.nonASCII), inMain(s.Log)
		nums := append(append([]string{cols}, s.headCols()...), `c.long`, `coalesce((SELECT `+intTag+`'' END FROM `+log+` WHERE seq = ?2), '')`)
		cols = textCols(nums...) + `, c.keys`
		// A range read only if it reaches the head: a LIMIT subquery runs
		// as a co-routine costing ~10µs even on an empty log.
		from += `, ` + inMain(SourcesTable) + ` s, (SELECT ` + s.groupKeys("key", f+` AND `+s.octets("key")+` <= ?4`) + ` AS keys,
			count(*) FILTER (WHERE ` + f + ` AND ` + s.octets("key") + ` > ?4) AS long
			FROM ` + log + ` WHERE seq > ?2 AND seq <= ?2 + ?3 AND (SELECT max(seq) FROM ` + log + `) <= ?2 + ?3) c
			WHERE s.id = ` + strconv.FormatInt(s.ID, 10)
	}
	if p.confirm {
		keys := "?1"
		switch {
		case p.size > 0:
			keys = s.keysFrom(7, p.size)
		case !p.single:
			keys = s.keysFrom(1, 0)
		}
		confirm := s.confirmSQL(p.spellings && s.Logged, p.single, keys, "?5")
		if p.versioned {
			confirm = s.versionsSQL(p.spellings && s.Logged, p.single, keys, "?5")
		}
		cols += `, CASE WHEN ck.schema_version = ?6 THEN (` + confirm + `) END`
	}
	return `SELECT ` + cols + from
}

// Probe runs one probe on the connection.
func (c *Conn) Probe(ctx context.Context, s *Source, o ProbeOptions, out *Probe) error {
	return probe(ctx, c, c.db.knobs, s, o, out)
}

// AppProbe runs one probe on the app's pool.
func (db *DB) AppProbe(ctx context.Context, s *Source, o ProbeOptions, out *Probe) error {
	return probe(ctx, db.app, db.knobs, s, o, out)
}

func probe(ctx context.Context, r runner, knobs Knobs, s *Source, o ProbeOptions, out *Probe) error {
	p, list, sp := shapeProbe(s, o)
	chunk := int64(max(0, min(o.Chunk, knobs.LogChunk)))
	// Every parameter up to the highest the statement names is bound
	// (NULL where unused): drivers count them up to the highest.
	top, n := 0, 1
	if s.Logged {
		top, n = 4, 2
	}
	if p.confirm {
		top, n = 6, n+1
	}
	args := make([]driver.NamedValue, top, top+p.size)
	for i := range args {
		args[i] = arg(i+1, nil)
	}
	if p.confirm {
		args[0].Value, args[5].Value = list, o.Schema
		if p.size > 0 {
			args = s.keyArgs(args, o.Keys, 7, p.size)
		}
		if p.spellings {
			args[4] = s.spelledArg(5, p.single, sp)
		}
	}
	if s.Logged {
		args[1].Value, args[2].Value, args[3].Value = int64(o.After), chunk, int64(knobs.ShortKey)
	}
	var vals [3]driver.Value
	err := r.first(ctx, s.sql(p), vals[:n], args...)
	if errors.Is(err, errNoRow) {
		err = ErrNotAttached
	}
	if err == nil {
		err = out.read(s, o, p, o.After+uint64(chunk), vals[:n])
	}
	if err != nil {
		return fmt.Errorf("probe %s: %w", s.Table, err)
	}
	return nil
}

// shapeProbe returns the probe's variant for o, the keys to bind as ?1
// (their JSON array, or the one key; nil plain) and the positions to
// confirm through spellings.
func shapeProbe(s *Source, o ProbeOptions) (p probeShape, list any, sp []byte) {
	p = probeShape{confirm: len(o.Keys) > 0, single: len(o.Keys) == 1, nonASCII: o.NonASCII, versioned: o.Versions != nil}
	switch {
	case p.single:
		list = o.Keys[0]
	case p.confirm:
		switch p.confirm = s.fitsOne(o.Keys); {
		case p.confirm && s.plain:
			p.size = plainSize(len(o.Keys))
		case p.confirm:
			arr := keyArray(o.Keys)
			list, p.confirm = arr, len(arr) <= listBytes
		}
	}
	if !p.confirm {
		p.single, p.versioned, p.size = false, false, 0
	} else if o.Spellings && s.Logged {
		sp = s.appendSpelled(nil, o.Keys, o.Spelled)
		p.spellings = sp != nil
	}
	return p, list, sp
}

// read fills out from the values of probe p; tailEnd is the last sequence
// number a tail read reaches.
func (out *Probe) read(s *Source, o ProbeOptions, p probeShape, tailEnd uint64, vals []driver.Value) (err error) {
	*out = Probe{Logged: out.Logged[:0], Found: out.Found[:0], Older: out.Older[:0], Confirmed: p.confirm}
	if s.Logged {
		var n [1 + headValues + 1]int64
		var rest string
		if rest, err = readInts(vals[0], n[:]); err != nil {
			return err
		}
		out.Schema = n[0]
		if out.Head, err = readHead(n[1:]); err != nil {
			return err
		}
		// A tag that is no integer (the log edited) is no entry the
		// caller read: the caller's view no longer covers the log.
		if tag, err := strconv.ParseInt(rest, 10, 64); err == nil {
			out.AfterTag, out.AfterFound = tag, true
		}
		if long := n[1+headValues]; long == 0 && out.Head.Seq <= tailEnd {
			if out.Logged, err = s.parseKeys(vals[1], out.Logged); err != nil {
				return fmt.Errorf("read log: %w", err)
			}
			out.Tail = true
		}
		vals = vals[2:]
	} else {
		var ok bool
		if out.Schema, ok = vals[0].(int64); !ok {
			return fmt.Errorf("schema cookie %v", vals[0])
		}
		vals = vals[1:]
	}
	if !p.confirm {
		return nil
	}
	if out.Schema != o.Schema {
		out.Confirmed = false // the caller's view is out of date
		return nil
	}
	if p.versioned {
		out.Found, out.Older, err = s.compareVersions(vals[0], 0, o.Versions, out.Found, out.Older)
	} else {
		out.Found, err = s.parsePositions(vals[0], 0, len(o.Keys), out.Found)
	}
	if err != nil {
		return fmt.Errorf("read found keys: %w", err)
	}
	return nil
}
