package rebuild

import (
	"context"
	"errors"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// answer returns, for each canonical key, whether the source holds it
// under any equivalent spelling. The filter rules out what it can; the
// rest is confirmed in the statement that checks the call is fresh (the
// probe), and, in one more, what the probe's catch-up turned into maybes,
// what the filter ruled out if it stayed behind, and spellings learned
// meanwhile.
func (c *call) answer(ctx context.Context, keys []string) ([]bool, error) {
	return retry(func() ([]bool, error) {
		v, err := c.answerOnce(ctx, keys)
		return v, c.orMoved(ctx, err)
	})
}

// What the answer of one key came from, for the counters.
const (
	byFilter = iota // the filter ruled it out: no SQLite lookup
	byMaybe         // the filter said maybe: SQLite confirmed or refuted it
	bySQLite        // no filter could rule on it: SQLite alone
)

func (c *call) answerOnce(ctx context.Context, keys []string) ([]bool, error) {
	ix := c.ix
	by := make([]uint8, len(keys))
	s := c.candidate()
	var before uint64 // the filter's generation when it ruled keys out
	ask := make([]int, 0, len(keys))
	if s != nil {
		before = s.at.gen()
		maybe, err := s.f.MightContainBatch(make([]bool, 0, len(keys)), keys)
		if err != nil {
			return nil, err
		}
		for i, m := range maybe {
			if m {
				ask = append(ask, i)
				by[i] = byMaybe
			}
		}
	} else {
		for i := range keys {
			ask = append(ask, i)
			by[i] = bySQLite
		}
	}
	if s != nil && len(ask) == 0 && c.quiet(ctx, s, before) {
		// Nothing committed since a probe caught s up: its "absent" holds.
		ix.m.count(by, nil)
		return make([]bool, len(keys)), nil
	}
	list, owner := c.withSpellings(keys, ask, ix.sp.cur.Load())
	// Whether a key the filter ruled out may be stored in another
	// spelling: if the filter stays behind, SQLite confirms it through
	// the stored spellings, which the probe then brings up to date.
	spelledOut := false
	for i, k := range keys {
		if by[i] == byFilter && maySpell(k) {
			spelledOut = true
			break
		}
	}
	began := time.Now()
	budget := ix.costs.budget(len(keys)-len(ask), c.f.st.LogChunk())
	if ix.db.cfg.knobs.behind {
		budget = 0
	} else if ix.db.cfg.knobs.noBudget {
		budget = c.f.st.LogChunk()
	}
	if err := c.probe(ctx, s, list, spelledOut, budget, ix.db.cfg.knobs.inline); err != nil {
		return nil, err
	}
	// The probe's time is the keys' cost when it read no log entry, and
	// the entries' (read, canonical form, bits) when it confirmed no key
	// and the filter took every entry it read (not when the filter stayed
	// behind and the probe read the entries for the spellings only): the
	// two measures the budget weighs.
	switch took, entries := time.Since(began), uint64(len(c.pr.Logged)); {
	case entries == 0:
		ix.costs.key.observe(took, uint64(len(list)))
	case len(list) == 0 && c.s != nil && !c.pr.NonASCIIOnly:
		ix.costs.entry.observe(took, entries)
	}
	got := c.pr.Found
	if !c.pr.Confirmed && len(list) > 0 {
		var err error
		began := time.Now()
		if got, err = c.confirm(ctx, list); err != nil {
			return nil, err
		}
		ix.costs.key.observe(time.Since(began), uint64(len(list)))
	}
	// SQLite names the positions in list of what it holds: a key asked,
	// or a stored spelling of one (owner says which).
	found := make([]bool, len(keys))
	for _, j := range got {
		found[owner[j]] = true
	}
	// One more statement, for what the filter does not rule out any more
	// and for keys whose spellings the catch-up learned.
	var more []int
	switch {
	case s != nil && c.s == nil: // the filter stayed behind: SQLite answers what it ruled out
		for i := range keys {
			if by[i] == byFilter {
				more = append(more, i)
				by[i] = bySQLite
			}
		}
	case s != nil && s.at.gen() > before: // caught up (by this call or another): look again at what it ruled out
		var ruledOut []string
		var at []int
		for i, k := range keys {
			if by[i] == byFilter {
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
				by[at[j]] = byMaybe
			}
		}
	}
	if c.sp != nil && c.sp.filled.Load() {
		// Keys SQLite answered before the catch-up learned their
		// spellings (those in more are asked with them).
		inMore := make([]bool, len(keys))
		for _, i := range more {
			inMore[i] = true
		}
		for i := range keys {
			if !found[i] && !inMore[i] && by[i] != byFilter && len(c.sp.of(keys[i])) > 0 {
				more = append(more, i)
			}
		}
	}
	if len(more) > 0 {
		list2, owner2 := c.withSpellings(keys, more, c.sp)
		began := time.Now()
		got2, err := c.confirm(ctx, list2)
		if err != nil {
			return nil, err
		}
		ix.costs.key.observe(time.Since(began), uint64(len(list2)))
		for _, j := range got2 {
			found[owner2[j]] = true
		}
	}
	ix.m.count(by, found)
	return found, nil
}

// quiet reports whether the call's keys, all ruled out by s, are
// answered without a probe (quietNote): nothing was committed since the
// noted probe, by the connection's data_version.
func (c *call) quiet(ctx context.Context, s *serving, gen uint64) bool {
	if c.ix.db.cfg.knobs.noQuiet {
		return false
	}
	q, ok := c.quietNote(s, gen)
	if !ok {
		return false
	}
	if v, err := c.conn.Version(ctx); err != nil || v != q.Version {
		return false
	}
	if f := c.ix.db.cfg.knobs.quiet; f != nil {
		f()
	}
	c.s = s
	return true
}

// confirm looks keys up in the source and returns the positions of those
// it holds: on the app's pool when it can (see DBConfig.DB), else (or
// once the app closed its pool) on the call's reading connection.
func (c *call) confirm(ctx context.Context, keys []string) ([]int, error) {
	return onAppOr(ctx, c, true, func() ([]int, error) {
		return c.f.st.AppConfirm(ctx, c.b.src, keys, maySpell, c.h.HasSpellings, nil)
	}, func(conn *store.Conn) ([]int, error) {
		return conn.Confirm(ctx, c.b.src, keys, maySpell, c.h.HasSpellings, nil)
	})
}

// onAppOr runs app, a statement on the app's pool, when the call may use
// it (want, the file the library opened at the path, a connection of the
// pool idle, not suspended: see DBConfig.DB); else, or once the app
// closed its pool or the pool reported a table lock (a shared cache), own
// on the call's reading connection.
func onAppOr[T any](ctx context.Context, c *call, want bool, app func() (T, error), own func(*store.Conn) (T, error)) (T, error) {
	if want && c.f.n == 1 && !c.ix.db.cfg.knobs.noAppPool && c.f.st.AppFree() {
		v, err := app()
		if !errors.Is(err, store.ErrAppLeft) {
			return v, err
		}
	}
	conn, err := c.reader(ctx) // given back if the call waited in a flight
	if err != nil {
		var zero T
		return zero, err
	}
	return own(conn)
}

// withSpellings returns the keys at positions at, and after them the
// stored spellings sp knows for them; owner[j] is the position in keys of
// the key list[j] asks about.
func (c *call) withSpellings(keys []string, at []int, sp *spellingSet) (list []string, owner []int) {
	list, owner = make([]string, len(at)), make([]int, len(at))
	for j, i := range at {
		list[j], owner[j] = keys[i], i
	}
	if sp == nil || !sp.filled.Load() {
		return list, owner
	}
	for _, i := range at {
		for _, s := range sp.of(keys[i]) {
			list, owner = append(list, s), append(owner, i)
		}
	}
	return list, owner
}

// answerOne answers one canonical key that cannot be stored in another
// spelling (!maySpell: the key is its only spelling), as Fetched asks:
// the filter's "absent" when nothing committed since a probe caught the
// filter up (quiet), otherwise one lookup of the key itself, exact
// without the log, the filter or the stored spellings (store.Lookup): a
// maybe is confirmed there, and so is an "absent" the filter may no
// longer vouch for (the follower catches the filter up meanwhile). A
// maybe needs no freshness check: whatever the log holds, the table
// answers, byte for byte. The lookup runs on the app's pool when it has a
// connection free, as a page's confirmation does.
func (c *call) answerOne(ctx context.Context, key string) (bool, error) {
	return retry(func() (bool, error) {
		v, err := c.answerOneOnce(ctx, key)
		return v, c.orMoved(ctx, err)
	})
}

func (c *call) answerOneOnce(ctx context.Context, key string) (bool, error) {
	by := [1]uint8{bySQLite}
	if s := c.candidate(); s != nil {
		before := s.at.gen()
		maybe, err := s.f.MightContainBatch(make([]bool, 0, 1), []string{key})
		if err != nil {
			return false, err
		}
		if maybe[0] {
			by[0] = byMaybe
		} else if c.quiet(ctx, s, before) {
			c.ix.m.count([]uint8{byFilter}, nil)
			return false, nil
		}
	}
	found, err := c.lookup(ctx, key)
	if err != nil {
		return false, err // answerOne resolves again if the table or column went (orMoved)
	}
	c.ix.m.count(by[:], []bool{found})
	return found, nil
}

// lookup looks key up in the source: on the app's pool when it can (see
// DBConfig.DB), else (or once the app closed its pool) on the call's
// reading connection.
func (c *call) lookup(ctx context.Context, key string) (bool, error) {
	return onAppOr(ctx, c, true, func() (bool, error) {
		return c.f.st.AppLookup(ctx, c.b.src, key)
	}, func(conn *store.Conn) (bool, error) {
		return conn.Lookup(ctx, c.b.src, key)
	})
}
