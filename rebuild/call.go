package rebuild

import (
	"context"
	"errors"
	"fmt"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// call is one public call's hold on its collection: the database file now
// at the path (a reference: the file stays open while the call uses it),
// the source as resolved in that file, a reading connection taken at first
// need, and, once probed, the log's head, the filter to trust, caught up
// to that head (nil: answer from SQLite), and the stored spellings the
// alias table may lack.
type call struct {
	ix   *Index
	f    *file
	b    *binding
	conn *store.Conn
	h    store.Head // logged sources, from the last probe
	s    *serving
	m    *memo
	pr   store.Probe // the last probe's result (its slices reused)
}

// binding is the source as resolved in one file at one schema cookie.
// err is set when answers about it cannot be exact (the table is gone,
// its key column is no longer exact or indexed): every call returns it
// until the schema changes again.
type binding struct {
	id     uint64
	f      *file
	schema int64 // the cookie read before resolving
	src    *store.Source
	err    error
}

// errStale is a probe that found the call's view out of date (the schema
// changed, the filter no longer covers the source): the caller starts
// over.
var errStale = errors.New("view out of date")

// look takes the file now at the path and the source as last resolved
// there (resolving it if the file is new to the index). A source that
// could not be answered for is resolved again once the schema changed;
// until then its error is returned.
func (ix *Index) look(ctx context.Context) (_ *call, err error) {
	f, err := ix.db.file(ctx)
	if err != nil {
		return nil, err
	}
	c := &call{ix: ix, f: f}
	defer func() {
		if err != nil {
			err = f.explain(err)
			c.end()
		}
	}()
	if b := ix.bound.Load(); b != nil && b.f == f {
		c.b = b
	} else if c.b, err = ix.bind(ctx, c); err != nil {
		return nil, err
	}
	if ix.pendingLoad.Load() && ctx.Value(loadingKey{}) == nil {
		if err := ix.ensureLoaded(context.WithValue(ctx, loadingKey{}, true), c); err != nil {
			return nil, err
		}
	}
	if c.b.err != nil {
		schema, err := c.schema(ctx)
		if err != nil {
			return nil, err
		}
		if schema != c.b.schema {
			if c.b, err = ix.bind(ctx, c); err != nil {
				return nil, err
			}
		}
		if c.b.err != nil {
			return nil, c.b.err
		}
	}
	return c, nil
}

// loadingKey marks the context of the opening load, whose own look must
// not wait for itself.
type loadingKey struct{}

// reader returns the call's reading connection, taking one at first need.
func (c *call) reader(ctx context.Context) (*store.Conn, error) {
	if c.conn == nil {
		conn, err := c.f.st.Reader(ctx)
		if err != nil {
			return nil, err
		}
		c.conn = conn
	}
	return c.conn, nil
}

// schema reads the schema cookie on the call's reader (taking one).
func (c *call) schema(ctx context.Context) (int64, error) {
	conn, err := c.reader(ctx)
	if err != nil {
		return 0, err
	}
	return conn.Schema(ctx)
}

// putReader gives the call's reading connection back, if it took one:
// before work that takes connections of its own (a scan and its count)
// or waits for work that may need one (a flight led by another call), so
// that it never waits for a connection its own caller holds.
func (c *call) putReader() {
	if c.conn != nil {
		c.f.st.Release(c.conn)
		c.conn = nil
	}
}

// end releases the call's connection and file.
func (c *call) end() {
	if c.conn != nil {
		c.f.st.Release(c.conn)
		c.conn = nil
	}
	c.f.release()
}

// bind resolves the source in the call's file. Resolving only reads and
// needs no lock: concurrent resolutions agree, and the latest is kept. A
// source whose triggers are not in place is attached again by the worker
// (or by the app's Rebuild, with NoBackgroundRebuild).
func (ix *Index) bind(ctx context.Context, c *call) (*binding, error) {
	schema, err := c.schema(ctx)
	if err != nil {
		return nil, err
	}
	src, err := store.Resolve(ctx, c.conn, ix.cfg.Table, ix.cfg.Column, ix.cfg.AllowUnindexed)
	b := &binding{id: newID(), f: c.f, schema: schema, src: src}
	if err != nil {
		if !errors.Is(err, ErrNoSource) && !errors.Is(err, ErrInexactColumn) && !errors.Is(err, ErrNotIndexed) {
			return nil, err // not about the source: try again next call
		}
		b.err = fmt.Errorf("the source changed: %w", err)
	}
	for {
		old := ix.bound.Load()
		if old != nil && old.f.n > b.f.n {
			break // a newer file's binding is kept
		}
		if ix.bound.CompareAndSwap(old, b) {
			break
		}
	}
	if b.err == nil && !src.Logged && ix.opened.Load() && !ix.db.cfg.ReadOnly && !ix.cfg.AutoRebuild.Off {
		ix.askRebuild("the source's triggers are not in place (a migration, or a new database file)")
	}
	return b, nil
}

// candidate returns the serving filter if it may cover the call's source
// (the probe checks its epoch and floor).
func (c *call) candidate() *serving {
	if s := c.ix.filter(); s != nil && s.file == c.f && c.b.src != nil && s.src.ID == c.b.src.ID {
		return s
	}
	return nil
}

// probe runs the call's probe (store.Conn.Probe): in one statement it
// checks the schema, reads the log's head and first new entries, and
// confirms keys (nil: none). It then brings the call up to date: s (the
// filter the caller asked with, or nil) and the memo take every key
// logged up to the head, whoever reads them. errStale: the schema changed
// or s no longer covers the source; start over.
func (c *call) probe(ctx context.Context, s *serving, keys []string) (err error) {
	ix := c.ix
	conn, err := c.reader(ctx)
	if err != nil {
		return err
	}
	src := c.b.src
	m := ix.memo.Load()
	// The generations before the probe: a probe that began before they
	// were read saw a head at least as far, so the probe's head is not
	// behind them unless the log went back.
	var sGen, mGen uint64
	if s != nil {
		sGen = s.gen.Load()
	}
	after := sGen
	if src.Logged && m != nil && m.fits(c.f, src.ID) {
		mGen = m.gen.Load()
		after = mGen
		if s != nil {
			after = min(mGen, sGen)
		}
	}
	opts := store.ProbeOptions{After: after, NonASCII: s == nil, Keys: keys, Aliases: ix.aliasHint.Load()}
	if err := conn.Probe(ctx, src, opts, &c.pr); err != nil {
		// A table the statement names was dropped or the source detached
		// meanwhile: the schema changed; resolve again.
		if schema, serr := conn.Schema(ctx); serr == nil && schema != c.b.schema {
			return c.rebind(ctx)
		}
		return err
	}
	if c.pr.Schema != c.b.schema {
		return c.rebind(ctx)
	}
	if !src.Logged {
		// Never attached (read-only), or its triggers were lost and are
		// not back yet: no log and no filter can vouch for anything.
		ix.dropFilter(ix.get().filter, errors.New("the source's triggers are not in place"))
		if s != nil {
			return errStale
		}
		c.m, err = ix.tableMemo(ctx, c)
		return err
	}
	h := c.pr.Head
	c.h = h
	if h.Aliases != opts.Aliases {
		ix.aliasHint.Store(h.Aliases)
		if len(keys) > 0 && h.Aliases {
			return errStale // confirmed without the alias table: again with it
		}
	}
	if s != nil && (!s.covers(c.f, src, h.Epoch) || s.gen.Load() < h.Floor) {
		why := errors.New("the source changed under the filter (attached again after its triggers were lost)")
		if s.gen.Load() < h.Floor { // another process compacted the log past it
			why = fmt.Errorf("catch up from generation %d, log starts after %d: %w", s.gen.Load(), h.Floor, ErrCannotCatchUp)
		}
		ix.dropFilter(s, why)
		return errStale
	}
	if h.Seq < sGen || h.Seq < mGen {
		// The log's head went back: the database was restored from a
		// backup (in place) or entries were deleted by hand. Entries
		// logged from now on reuse sequence numbers the filter and the
		// memo count as read: neither may be trusted.
		why := fmt.Errorf("the log's head went back from %d to %d (a backup restored into the database?): %w", max(sGen, mGen), h.Seq, ErrCannotCatchUp)
		ix.memo.CompareAndSwap(m, nil)
		if s != nil && h.Seq < sGen {
			ix.dropFilter(s, why)
		}
		return errStale
	}
	if s != nil && s.schema.Load() != c.pr.Schema {
		// The schema changed since s was last checked against the log:
		// a migration, or a backup restored in place (refill).
		if err := ix.refill(ctx, c, s, sGen); err != nil {
			return err
		}
	}
	if m != nil && m.schema != c.pr.Schema {
		ix.memo.CompareAndSwap(m, nil) // built again for this schema (logMemo): a restore may have logged other spellings
	}
	fresh := m == nil || !m.fitsHead(c.f, src.ID, h)
	if c.m, err = ix.logMemo(ctx, c); err != nil {
		return err
	}
	if fresh && len(keys) > 0 && c.m.filled.Load() {
		return errStale // the confirmation lacked spellings the new memo knows
	}
	if c.pr.Read > after { // the first chunk of the log after after
		if err := ix.apply(ctx, c, s, after, c.pr.Read, c.pr.Logged); err != nil {
			return err
		}
	}
	if c.m.gen.Load() < h.Seq || s != nil && s.gen.Load() < h.Seq { // more than a chunk behind: the rest in chunks
		err := ix.catchUp(ctx, c, s)
		if errors.Is(err, ErrCannotCatchUp) {
			// Compacted while it was read (by another process): the
			// filter cannot vouch, and the memo starts again.
			if s != nil {
				ix.dropFilter(s, err)
			}
			ix.memo.CompareAndSwap(c.m, nil)
			return errStale
		}
		if err != nil {
			return err
		}
	}
	c.s = s
	if s != nil && s.schema.Load() == c.pr.Schema {
		raise(&s.floor, h.Floor)
	}
	if s != nil && c.conn == conn { // still the probing connection (a catch-up may give it back)
		conn.Note(ix.id, store.Note{Version: c.pr.Version, Filter: s.id, Binding: c.b.id, Head: h.Seq})
	}
	ix.checkDue(c)
	return nil
}

// testHookQuiet, when set by tests, runs when a call answers without a
// probe (stillQuiet).
var testHookQuiet func()

// stillQuiet reports whether the filter's "absent" for every key of the
// call needs no probe: the last probe of this index on the call's
// connection (store.Conn.Note) checked the schema, bound the source
// (the same binding as the call's), validated s for it and caught s up
// to the head it read; nothing was committed since (the connection's
// data_version is the same: any commit of any connection or process,
// the library's writer included, changes it); and s had reached that
// head when it ruled the keys out (gen: a call may rule its keys out
// while the probe that notes is still catching s up, and take the
// connection after it). Another filter or binding, or any error, sends
// the call through its probe. A new file at the path has connections of
// its own.
func (c *call) stillQuiet(ctx context.Context, s *serving, gen uint64) bool {
	conn, err := c.reader(ctx)
	if err != nil {
		return false
	}
	q, ok := conn.Noted(c.ix.id)
	if !ok || q.Filter != s.id || q.Binding != c.b.id || gen < q.Head {
		return false
	}
	v, err := conn.Version(ctx)
	return err == nil && v == q.Version
}

// head probes without keys: the call's source resolved in the current
// schema, its head read, and the serving filter and memo caught up.
func (c *call) head(ctx context.Context) error {
	for tries := 0; ; tries++ {
		if tries == 16 {
			return errors.New("the database keeps changing under the call (schema or attachment)")
		}
		err := c.probe(ctx, c.candidate(), nil)
		if !errors.Is(err, errStale) {
			return err
		}
	}
}

// rebind resolves the source again after a change of schema and reports
// errStale (or the binding's error).
func (c *call) rebind(ctx context.Context) error {
	b, err := c.ix.bind(ctx, c)
	if err != nil {
		return err
	}
	c.b = b
	if b.err != nil {
		return b.err
	}
	return errStale
}

// answer returns, for each canonical key, whether the source holds it
// under any equivalent spelling. The filter rules out what it can; the
// rest is confirmed in the statement that checks the call is fresh (the
// probe), and what the catch-up in that probe turned into maybes, in one
// more. s reports the filter used (nil: SQLite answered alone).
func (c *call) answer(ctx context.Context, keys []string) (found []bool, err error) {
	ix := c.ix
	for tries := 0; ; tries++ {
		if tries == 16 {
			return nil, errors.New("the database keeps changing under the call (schema or attachment)")
		}
		s := c.candidate()
		var before uint64 // the filter's generation when it ruled keys out
		ask := make([]int, 0, len(keys))
		if s != nil {
			before = s.gen.Load()
			maybe, err := s.f.MightContainBatch(make([]bool, 0, len(keys)), keys)
			if err != nil {
				return nil, err
			}
			for i, m := range maybe {
				if m {
					ask = append(ask, i)
				}
			}
		} else {
			for i := range keys {
				ask = append(ask, i)
			}
		}
		if s != nil && len(ask) == 0 && c.stillQuiet(ctx, s, before) {
			if testHookQuiet != nil {
				testHookQuiet()
			}
			c.s = s
			c.count(len(keys), 0, make([]bool, len(keys)))
			return make([]bool, len(keys)), nil
		}
		list, spelled := c.withSpellings(keys, ask, ix.memo.Load())
		err := c.probe(ctx, s, list)
		if errors.Is(err, errStale) || errors.Is(err, syncfilter.ErrClosed) { // the filter was replaced meanwhile
			continue
		}
		if err != nil {
			return nil, err
		}
		got := c.pr.Found
		if !c.pr.Confirmed && len(list) > 0 {
			conn, err := c.reader(ctx) // given back if the probe waited in a flight
			if err != nil {
				return nil, err
			}
			if got, err = conn.Confirm(ctx, c.b.src, list, c.h.Aliases, nil); err != nil {
				return nil, err
			}
		}
		// Keys come back as stored (or as asked, through the alias
		// table); a page may hold a key twice.
		holds := make(map[string]struct{}, len(got))
		mark := func(got []string, spelled map[string]string) {
			for _, k := range got {
				if canon, ok := spelled[k]; ok {
					k = canon
				}
				holds[k] = struct{}{}
			}
		}
		mark(got, spelled)
		found = make([]bool, len(keys))
		for _, i := range ask {
			_, found[i] = holds[keys[i]]
		}
		// What the catch-up turned into maybes, and spellings it learned
		// for keys not found: one more statement.
		var more []int
		if s != nil && s.gen.Load() > before { // caught up (by this call or another): look again at what it ruled out
			asked := make([]bool, len(keys))
			for _, i := range ask {
				asked[i] = true
			}
			var ruledOut []string
			var at []int
			for i, k := range keys {
				if !asked[i] {
					ruledOut = append(ruledOut, k)
					at = append(at, i)
				}
			}
			maybe, err := s.f.MightContainBatch(make([]bool, 0, len(ruledOut)), ruledOut)
			if err != nil {
				return nil, err
			}
			for j, m := range maybe {
				if m {
					more = append(more, at[j])
				}
			}
		}
		if c.m != nil && c.m.filled.Load() {
			for _, i := range ask {
				if !found[i] && len(c.m.spellings(keys[i])) > 0 {
					more = append(more, i)
				}
			}
		}
		if len(more) > 0 {
			list2, spelled2 := c.withSpellings(keys, more, c.m)
			conn, err := c.reader(ctx)
			if err != nil {
				return nil, err
			}
			got2, err := conn.Confirm(ctx, c.b.src, list2, c.h.Aliases, nil)
			if err != nil {
				return nil, err
			}
			mark(got2, spelled2)
			for _, i := range more {
				_, found[i] = holds[keys[i]]
			}
		}
		c.count(len(keys), len(ask)+len(more), found)
		return found, nil
	}
}

// withSpellings returns the keys at positions at, and after them the
// stored spellings the memo knows for them, with the map from spelling to
// canonical key.
func (c *call) withSpellings(keys []string, at []int, m *memo) (list []string, spelled map[string]string) {
	list = make([]string, len(at))
	for j, i := range at {
		list[j] = keys[i]
	}
	if m == nil || !m.filled.Load() {
		return list, nil
	}
	for _, i := range at {
		for _, sp := range m.spellings(keys[i]) {
			if spelled == nil {
				spelled = map[string]string{}
			}
			spelled[sp] = keys[i]
			list = append(list, sp)
		}
	}
	return list, spelled
}

// count records a call's answers in the metrics: n keys, asked of SQLite
// (all of them in bypass), found.
func (c *call) count(n, asked int, found []bool) {
	m := &c.ix.m
	confirmed := uint64(0)
	for _, f := range found {
		if f {
			confirmed++
		}
	}
	if c.s == nil {
		m.bypass.Add(uint64(asked))
		return
	}
	m.negatives.Add(uint64(n - asked))
	m.confirmedPage(uint64(asked), confirmed)
	m.served(uint64(n), uint64(asked)-confirmed)
}
