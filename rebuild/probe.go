package rebuild

import (
	"context"
	"errors"
	"fmt"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// The freshness protocol. Before a call trusts its filter's "absent", the
// filter must cover the source as the database is now: the same file (one
// stat, file.go), the same schema, attachment and epoch, a log that still
// holds what the filter read (the tag of the entry at its mark), and
// every entry logged after its mark taken in. The stored spellings must
// be current too: a confirmation is exact only if it asks for every
// spelling a key may be stored under. All of that is read in the one
// statement that also confirms the call's maybes (store.Conn.Probe).

// probe runs the call's probe: in one statement it checks the schema,
// reads the log's head and the tags at the filter's and the spellings'
// marks, reads new log entries, and confirms keys (nil: none). It then
// brings the call up to date: c.s is s (the filter the caller asked with,
// or nil) if s takes every key logged up to the head, or nil if it stays
// behind; c.sp, the stored spellings, take them too when the call needs
// them (a key that may be stored in another spelling, maySpell; always
// when full), else c.sp is nil. The filter is caught up inline when full
// (the follower, the worker), or when the entries it lacks number at most
// budget (a call: reading them costs less than confirming the keys it
// rules out); otherwise the call confirms every key, what s ruled out in
// a statement of its own, and the follower catches the filter up.
// spelledOut says whether a key s ruled out may be stored in another
// spelling (the stored spellings are then brought up to date for it).
// errStale: the schema changed, or s no longer covers the source; start
// over.
func (c *call) probe(ctx context.Context, s *serving, keys []string, spelledOut bool, budget int, full bool) (err error) {
	ix := c.ix
	c.s, c.sp = nil, nil
	src := c.b.src
	if !src.Logged {
		// Never attached (read-only), detached, or its triggers were lost
		// and are not back yet (what the binding saw at its schema, a fact
		// of the file's history whatever came after): no log and no
		// filter can vouch for anything. The filter of this file goes (a
		// rebuild attaches the source again, unless it was detached),
		// before the probe confirms anything with it.
		if old := ix.filter(); old != nil && old.file == c.f {
			if c.b.detached {
				ix.retire(old, errors.New("the source was detached"))
			} else {
				ix.dropFilter(old, errors.New("the source's triggers are not in place"))
			}
		}
		if s != nil {
			return errStale // the keys it ruled out are SQLite's to answer
		}
	}
	spelled := anySpelled(keys) || spelledOut
	needSp := spelled || full && src.Logged // no log: nothing to keep current
	var sp *spellingSet
	if needSp {
		if sp = ix.sp.cur.Load(); sp != nil && !(src.Logged && sp.fits(c.f, src.ID)) {
			sp = nil
		}
	}
	// The marks before the probe: a probe that began after they were read
	// saw a head at least as far, so the probe's head is not behind them
	// unless the log went back.
	var sAt, spAt mark
	if s != nil {
		sAt = s.at.get()
	}
	if sp != nil {
		spAt = sp.at.get()
	}
	opts := store.ProbeOptions{After: sAt.gen, Check: spAt.gen, Keys: keys, Spellings: ix.sp.table.Load(), Spelled: maySpell, Schema: c.b.schema}
	switch {
	case s == nil && !needSp:
		// Nothing to feed: the head only.
	case s == nil:
		// No filter to feed: only the entries that may be stored spellings.
		opts.After, opts.Check, opts.NonASCII, opts.Chunk = spAt.gen, sAt.gen, true, c.f.st.LogChunk()
	case sp != nil && spAt.gen < sAt.gen:
		opts.After, opts.Check = spAt.gen, sAt.gen
		opts.Chunk, opts.Whole = c.f.st.LogChunk(), !full
	case full:
		opts.Chunk = c.f.st.LogChunk()
	default:
		opts.Chunk, opts.Whole = budget, true
		if needSp {
			opts.Else = c.f.st.LogChunk()
		}
	}
	// A page's confirmation runs on the app's pool when it can (warm
	// pages, see DBConfig.DB), on the original file only: after the app
	// replaced the file, its pool may still hold connections to the old.
	// The library's own reading connection is taken only when the probe
	// runs on it: a call on the app's pool never waits for one (a scan
	// may hold some). Once the app closed its pool, the probe runs on the
	// library's reader.
	var conn *store.Conn // the probing connection, if the library's
	_, perr := onAppOr(ctx, c, len(keys) > 0, func() (struct{}, error) {
		return struct{}{}, c.f.st.AppProbe(ctx, src, opts, &c.pr)
	}, func(r *store.Conn) (struct{}, error) {
		conn = r
		return struct{}{}, r.Probe(ctx, src, opts, &c.pr)
	})
	if perr != nil {
		// A table the statement names was dropped or the source detached
		// meanwhile: the schema changed; resolve again.
		return c.orMoved(ctx, perr)
	}
	if c.pr.Schema != c.b.schema {
		return c.rebind(ctx)
	}
	if !src.Logged {
		if needSp {
			c.sp, err = ix.tableSpellings(ctx, c)
		}
		return err
	}
	h := c.pr.Head
	c.h = h
	if h.HasSpellings != opts.Spellings {
		ix.sp.table.Store(h.HasSpellings)
		if h.HasSpellings && anySpelled(keys) {
			return errStale // confirmed without the spellings table: again with it
		}
	}
	if s != nil && (!s.covers(c.f, src, h.Epoch) || sAt.gen < h.Floor) {
		why := errors.New("the source changed under the filter (attached again after its triggers were lost)")
		if sAt.gen < h.Floor { // another process compacted the log past it
			why = fmt.Errorf("catch up from generation %d, log starts at %d: %w", sAt.gen, h.Floor, ErrCannotCatchUp)
		}
		ix.dropFilter(s, why)
		return errStale
	}
	if h.Seq < sAt.gen || h.Seq < spAt.gen {
		// The log's head went back: the database was restored from a
		// backup (in place) or entries were deleted by hand. Entries
		// logged from now on reuse sequence numbers the filter and the
		// spellings count as read: neither may be trusted.
		if sp != nil {
			ix.sp.drop(sp)
		}
		if s != nil && h.Seq < sAt.gen {
			ix.dropFilter(s, fmt.Errorf("the log's head went back from %d to %d (a backup restored into the database?): %w", sAt.gen, h.Seq, ErrCannotCatchUp))
		}
		return errStale
	}
	// The log still holds what they read: the entry at each mark has the
	// tag it had. A backup restored in place gives sequence numbers out
	// again, with other tags.
	if s != nil && !holds(&c.pr, opts, sAt) {
		s.suspect.Store(true)
		ix.db.work.ask(jobRefill, ix)
		return errStale
	}
	if sp != nil && !holds(&c.pr, opts, spAt) {
		ix.sp.drop(sp)
		return errStale
	}
	if needSp {
		fresh := sp == nil || !sp.fitsHead(c.f, src.ID, h)
		if c.sp, err = ix.logSpellings(ctx, c); err != nil {
			return err
		}
		if fresh && len(keys) > 0 && c.sp.filled.Load() {
			return errStale // the confirmation lacked spellings the new set knows
		}
	}
	if c.pr.Read > opts.After { // the chunk of the log the probe read
		feed := s
		if c.pr.NonASCIIOnly {
			feed = nil // the entries that may be stored spellings only
		}
		if err := ix.apply(ctx, c, feed, opts.After, c.pr.Read, c.pr.Logged); err != nil {
			return err
		}
	}
	caughtUp := s != nil && s.at.gen() >= h.Seq
	switch {
	case s == nil || caughtUp:
	case full:
		caughtUp = true // by catchUp below
	default:
		s = nil // behind by more than the call would read: SQLite answers every key
	}
	if c.sp != nil && c.sp.at.gen() < h.Seq || s != nil && !caughtUp {
		err := ix.catchUpLog(ctx, c, s)
		if errors.Is(err, ErrCannotCatchUp) {
			// Compacted while it was read (by another process): the
			// filter cannot vouch, and the spellings start again.
			if s != nil {
				ix.dropFilter(s, err)
			}
			if c.sp != nil {
				ix.sp.drop(c.sp)
			}
			return errStale
		}
		if err != nil {
			return err
		}
	}
	c.s = s
	if s != nil {
		raise(&s.floor, h.Floor)
		if conn != nil && c.conn == conn { // still the probing connection (a catch-up may give it back)
			conn.Note(ix.id, store.Note{Version: c.pr.Version, Filter: s.id, Binding: c.b.id, Head: h.Seq})
		}
		ix.checkDue(s)
	}
	return nil
}

// anySpelled reports whether a key of keys may be stored in another
// spelling (maySpell).
func anySpelled(keys []string) bool {
	for _, k := range keys {
		if maySpell(k) {
			return true
		}
	}
	return false
}

// holds reports whether the log entry at m's generation still has m's
// tag, by what the probe read (opts said which generations).
func holds(p *store.Probe, opts store.ProbeOptions, m mark) bool {
	if m.gen == 0 || m.tag == 0 {
		return true // nothing read from the log yet, or a mark without a tag: nothing to check
	}
	switch m.gen {
	case opts.After:
		return p.AfterFound && p.AfterTag == m.tag
	case opts.Check:
		return p.CheckFound && p.CheckTag == m.tag
	}
	return true
}

// quietNote returns the note that lets the call skip its probe, if
// nothing was committed since it was taken (the caller reads the
// connection's data_version and compares it with the note's): then the
// filter's "absent" holds for every key it ruled out. The last probe
// of this index on the connection (store.Conn.Note) checked the schema,
// bound the source (the same binding as the call's), validated s for it
// and caught s up to the head it read; any commit of any connection or
// process, the library's writer included, changes the data_version; and
// s had reached that head when it ruled the keys out (gen: a call may
// rule its keys out while the probe that notes is still catching s up,
// and take the connection after it). Another filter or binding, or no
// idle connection (the call never waits for one here), sends the call
// through its probe. A new file at the path has connections of its own.
func (c *call) quietNote(s *serving, gen uint64) (store.Note, bool) {
	conn := c.conn
	if conn == nil {
		var ok bool
		if conn, ok = c.f.st.IdleReader(); !ok {
			return store.Note{}, false
		}
		c.conn = conn
	}
	q, ok := conn.Noted(c.ix.id)
	if !ok || q.Filter != s.id || q.Binding != c.b.id || gen < q.Head {
		return store.Note{}, false
	}
	return q, true
}
