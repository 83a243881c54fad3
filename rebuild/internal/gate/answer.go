package gate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// Answer reports, for each canonical key, whether the source holds it
// under any equivalent spelling: the filter rules out what it can, the
// rest is confirmed in the statement that checks the call is fresh (the
// probe), and in one more what the probe's tail turned into maybes.
func (c *Call) Answer(ctx context.Context, keys []string) ([]bool, error) {
	p, err := c.answerPage(ctx, keys, nil)
	if err != nil {
		return nil, err
	}
	return p.found, nil
}

// Typed returns the versions of a page's keys as the source the call is
// bound to takes them (int64 for an INTEGER column, string for TEXT), or
// why they cannot be asked about (the column unusable, a version of
// another type).
type Typed func(src *store.Source) ([]any, error)

// AnswerVersions is Answer of keys with their versions, typed for the
// source as each attempt finds it: found reports that the source holds a
// key, fresh that one of its rows holds a version >= the one given. The
// filter rules out what it can; every maybe is confirmed with its
// versions in the statement that confirms.
func (c *Call) AnswerVersions(ctx context.Context, keys []string, typed Typed) (found, fresh []bool, err error) {
	p, err := c.answerPage(ctx, keys, typed)
	if err != nil {
		return nil, nil, err
	}
	return p.found, p.fresh, nil
}

func (c *Call) answerPage(ctx context.Context, keys []string, typed Typed) (*page, error) {
	return retry(func() (*page, error) {
		p, err := c.answer(ctx, keys, typed)
		return p, c.orMoved(ctx, err)
	})
}

// page is one attempt at answering a call's keys.
type page struct {
	keys  []string
	vers  []any   // with versions: of each key; nil: by key alone
	by    []uint8 // what answered each key (byFilter, byMaybe, bySQLite)
	found []bool
	fresh []bool // with versions: a row holds a version >= the key's
	asked []int  // the spellings each key was asked with
}

func (c *Call) answer(ctx context.Context, keys []string, typed Typed) (*page, error) {
	if err := c.newest(); err != nil {
		return nil, err
	}
	vers, err := c.versions(ctx, typed)
	if err != nil {
		return nil, err
	}
	p := &page{keys: keys, vers: vers, by: make([]uint8, len(keys)), found: make([]bool, len(keys)), asked: make([]int, len(keys))}
	if vers != nil {
		p.fresh = make([]bool, len(keys))
	}
	v := c.trusted()
	var before Mark // v's mark when it rules keys out: read first
	if v != nil {
		before = v.Mark()
	}
	ask, err := p.ruleOut(v, nil)
	if err != nil {
		return nil, err
	}
	// The view whose stored spellings the confirmation asks through: the
	// serving one, or one of the spellings alone; a walked one lends
	// every spelling of the keys and reads no log (track is nil).
	sv := v
	var w *walk
	if sv == nil && c.g.anySpelled(keys) {
		w = &walk{keys: keys, spells: c.g.spells, off: c.g.cfg.Knobs.NoWalk, note: c.g.cfg.Knobs.Walk}
		if sv, err = c.spellingsView(ctx, w); err != nil {
			return nil, err
		}
	}
	track, walked := sv, map[string][]string(nil)
	if sv != nil && sv.Walked && w != nil {
		track, walked = nil, w.other
	}
	var at Mark // track's mark, which the probe reads after
	if track != nil {
		at = track.Mark()
	}
	list, owner := withSpellings(keys, ask, track, walked)
	pr, err := c.probe(ctx, track, at, list, p.versionsOf(owner), walked != nil)
	if err != nil {
		return nil, err
	}
	behind := false
	var extra map[string][]string // spellings logged beyond track's mark, when it stays behind
	if track != nil && c.b.src.Logged {
		if behind, err = c.advance(ctx, track, at, pr, c.g.cfg.Knobs.Inline); err != nil {
			return nil, err
		}
		if behind && c.g.anySpelled(keys) {
			if extra, err = c.tailSpellings(ctx, track.Mark().Gen, pr.Head.Seq); err != nil {
				return nil, c.stale(track, err)
			}
		}
	}
	// Walked spellings are every spelling: the spellings table has none
	// to add.
	spellings := pr.Head.HasSpellings && walked == nil
	got, older := pr.Found, pr.Older
	if !pr.Confirmed && len(list) > 0 {
		if got, older, err = c.confirm(ctx, list, p.versionsOf(owner), spellings); err != nil {
			return nil, err
		}
	}
	p.take(owner, got, older)
	if err := c.again(ctx, p, v, track, before, behind, extra, spellings); err != nil {
		return nil, err
	}
	c.g.count(p.by, p.found)
	return p, nil
}

// versions types a page's versions for the source the call is bound to
// (nil for a page by key alone). A refusal may come from a binding older
// than the schema (the column added, dropped or retyped since): the
// source is resolved again once before it stands.
func (c *Call) versions(ctx context.Context, typed Typed) ([]any, error) {
	if typed == nil {
		return nil, nil
	}
	vers, err := typed(c.b.src)
	if err != nil {
		if ferr := c.Fresh(ctx); ferr != nil {
			return nil, ferr
		}
		vers, err = typed(c.b.src)
	}
	return vers, err
}

// versionsOf returns the versions of the keys owner maps a list to (nil
// for a page by key alone).
func (p *page) versionsOf(owner []int) []any {
	if p.vers == nil {
		return nil
	}
	out := make([]any, len(owner))
	for j, i := range owner {
		out[j] = p.vers[i]
	}
	return out
}

// ruleOut returns the positions v (nil: none serves) does not rule out
// among those of only (nil: all).
func (p *page) ruleOut(v *View, only []int) ([]int, error) {
	if v == nil {
		at := only
		if at == nil {
			at = make([]int, len(p.keys))
			for i := range at {
				at[i] = i
			}
		}
		for _, i := range at {
			p.by[i] = bySQLite
		}
		return at, nil
	}
	keys := p.keys
	if only != nil {
		keys = make([]string, len(only))
		for j, i := range only {
			keys[j] = p.keys[i]
		}
	}
	maybe, err := v.F.MightContainBatch(make([]bool, 0, len(keys)), keys)
	if err != nil {
		return nil, err
	}
	var ask []int
	for j, m := range maybe {
		if m {
			i := j
			if only != nil {
				i = only[j]
			}
			ask = append(ask, i)
			p.by[i] = byMaybe
		}
	}
	return ask, nil
}

// take notes what SQLite found: got are positions in the list owner maps,
// older those of them held only at older versions.
func (p *page) take(owner, got, older []int) {
	for _, i := range owner {
		p.asked[i]++
	}
	o := 0 // older and got are in increasing order: one pass over both
	for _, j := range got {
		p.found[owner[j]] = true
		for o < len(older) && older[o] < j {
			o++
		}
		if p.fresh != nil && (o == len(older) || older[o] != j) {
			p.fresh[owner[j]] = true
		}
	}
}

// again asks SQLite, in one more statement, about the keys v ruled out
// while it stayed behind (all of them) or before it took entries in (those
// it no longer rules out), and about keys with spellings learned since
// they were asked.
func (c *Call) again(ctx context.Context, p *page, v, sv *View, before Mark, behind bool, extra map[string][]string, spellings bool) error {
	var more []int
	switch {
	case v != nil && behind:
		more = p.ruledOut()
		for _, i := range more {
			p.by[i] = bySQLite
		}
	case v != nil && v.Mark().Gen > before.Gen:
		if out := p.ruledOut(); len(out) > 0 {
			var err error
			if more, err = p.ruleOut(v, out); err != nil {
				return err
			}
		}
	}
	if sv != nil {
		for i, k := range p.keys {
			if (!p.found[i] || p.fresh != nil && !p.fresh[i]) && p.by[i] != byFilter && c.g.spells(k) && 1+len(sv.Spellings(k))+len(extra[k]) > p.asked[i] && !slices.Contains(more, i) {
				more = append(more, i)
			}
		}
	}
	if len(more) == 0 {
		return nil
	}
	list, owner := withSpellings(p.keys, more, sv, extra)
	got, older, err := c.confirm(ctx, list, p.versionsOf(owner), spellings)
	if err != nil {
		return err
	}
	p.take(owner, got, older)
	return nil
}

// ruledOut returns the positions the filter ruled out (nil when none,
// which ruleOut would read as all: check the length first).
func (p *page) ruledOut() []int {
	var out []int
	for i, by := range p.by {
		if by == byFilter {
			out = append(out, i)
		}
	}
	return out
}

// trusted returns the serving view if it may cover the call's source:
// a logged one, of the same file and row (the probe checks its epoch and
// mark).
func (c *Call) trusted() *View {
	if v := c.g.Serving(); v != nil && v.File == c.F && c.b.src != nil && c.b.src.Logged && v.Src.ID == c.b.src.ID {
		return v
	}
	return nil
}

// probe runs the call's probe on the app's pool when it may (warm pages,
// see DBConfig.DB), else on the call's reader. It resolves the source again when the schema
// changed (errStale). walked: keys holds every spelling of the call's
// keys, and the spellings table is not asked.
func (c *Call) probe(ctx context.Context, sv *View, at Mark, keys []string, vers []any, walked bool) (*store.Probe, error) {
	src := c.b.src
	opts := store.ProbeOptions{Keys: keys, Versions: vers, Spellings: c.g.spellingsTable() && !walked, Spelled: c.g.spelledFunc(), Schema: c.b.schema}
	if sv != nil && src.Logged {
		opts.After, opts.Chunk, opts.NonASCII = at.Gen, c.F.St.LogChunk(), sv.F == nil
		if c.g.cfg.Knobs.Behind && sv.F != nil {
			opts.Chunk = 0
		}
	}
	err := c.onAppOr(ctx, len(keys) > 0, func() error {
		return c.F.St.AppProbe(ctx, src, opts, &c.pr)
	}, func(r *store.Conn) error {
		return r.Probe(ctx, src, opts, &c.pr)
	})
	if err != nil {
		return nil, c.orMoved(ctx, err)
	}
	if f := c.g.cfg.Knobs.AfterProbe; f != nil && len(keys) > 0 {
		f()
	}
	if c.pr.Schema != c.b.schema {
		if err := c.rebind(ctx); err != nil {
			return nil, err
		}
		return nil, errStale
	}
	if src.Logged {
		c.g.hasSp.Store(c.pr.Head.HasSpellings)
		if c.pr.Head.HasSpellings && !opts.Spellings && !walked && c.g.anySpelled(keys) {
			return nil, errStale // confirmed without the spellings table: again with it
		}
	} else if held := c.g.Held(); held != nil && held.File == c.F && held.Src.Logged {
		// No log vouches for anything now (detached, the triggers lost):
		// the views of this file go, unless a newer binding came since.
		if c.g.bound.Load() != c.b {
			return nil, errStale
		}
		c.g.drop(held, errors.New("the source's triggers are not in place"), false)
		if sv == held {
			return nil, errStale
		}
	}
	return &c.pr, nil
}

// advance checks that sv still covers the source as the probe (which read
// after sv's mark at) read it, and takes the probe's tail in; a longer tail is read too when full (or
// when sv holds spellings alone: reading what may be a spelling is
// cheap), else behind reports that sv stays short of the head and the
// background is asked to catch it up. A view that no longer covers the
// source is dropped (errStale).
func (c *Call) advance(ctx context.Context, sv *View, at Mark, pr *store.Probe, full bool) (behind bool, err error) {
	h := pr.Head
	var why error
	switch {
	case !sv.Covers(c.F, c.b.src, h.Epoch):
		why = errors.New("the source changed under the filter (attached again after its triggers were lost)")
	case at.Gen < h.Floor:
		why = fmt.Errorf("catch up from generation %d, log starts at %d: %w", at.Gen, h.Floor, store.ErrCannotCatchUp)
	case h.Seq < at.Gen:
		why = fmt.Errorf("the log's head went back from %d to %d (a backup restored into the database?): %w", at.Gen, h.Seq, store.ErrCannotCatchUp)
	case at.Tag != 0 && (!pr.AfterFound || pr.AfterTag != at.Tag):
		why = fmt.Errorf("the log no longer holds what the filter read at %d (a backup restored into the database?): %w", at.Gen, store.ErrCannotCatchUp)
	}
	if why != nil {
		c.g.drop(sv, why, true)
		return false, errStale
	}
	if h.Seq == at.Gen {
		return false, nil
	}
	if pr.Tail {
		if err := c.g.take(ctx, sv, pr.Logged); err != nil {
			return false, err
		}
		c.g.reached(sv, at.Gen, Mark{h.Seq, h.Tag})
		return false, nil
	}
	if full || sv.F == nil {
		return false, c.stale(sv, c.catchUp(ctx, sv, h))
	}
	if c.g.cfg.Behind != nil && !c.g.cfg.Knobs.Behind {
		c.g.cfg.Behind()
	}
	return true, nil
}

// stale drops sv when err says the log no longer holds what sv lacks
// (compacted past it meanwhile, ErrCannotCatchUp): a rebuild follows, and
// the call answers again from SQLite (errStale).
func (c *Call) stale(sv *View, err error) error {
	if errors.Is(err, store.ErrCannotCatchUp) {
		c.g.drop(sv, err, true)
		return errStale
	}
	return err
}

// tailSpellings reads the stored spellings logged after from up to to.
func (c *Call) tailSpellings(ctx context.Context, from, to uint64) (map[string][]string, error) {
	conn, err := c.Reader(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	err = readLog(ctx, conn, c.b.src, from, to, true, func(_ uint64, keys []string) error {
		pairs, _ := canon(c.g.cfg.Compare, keys, nil)
		for _, p := range pairs {
			out[p[0]] = append(out[p[0]], p[1])
		}
		return nil
	})
	return out, err
}

// confirm looks keys up in the source and returns the positions of those
// it holds; with vers, also those held only at older versions.
func (c *Call) confirm(ctx context.Context, keys []string, vers []any, spellings bool) (found, older []int, err error) {
	err = c.onAppOr(ctx, true, func() error {
		found, older, err = c.F.St.AppConfirm(ctx, c.b.src, keys, vers, c.g.spelledFunc(), spellings, nil, nil)
		return err
	}, func(conn *store.Conn) error {
		found, older, err = conn.Confirm(ctx, c.b.src, keys, vers, c.g.spelledFunc(), spellings, nil, nil)
		return err
	})
	return found, older, err
}

// Prepare prepares the probe of a page of keys on the app's pool, where
// the first page of the process runs it (see onAppOr): one of the pool's
// connections, if idle, then holds it prepared.
func (c *Call) Prepare(ctx context.Context) {
	if c.appPool() && !c.g.cfg.Knobs.NoPrepare && c.b.src.Logged {
		c.F.St.PrepareProbe(ctx, c.b.src)
	}
}

// appPool reports whether the call may run statements on the app's pool:
// on the file the library opened first (the pool's), unless switched off.
func (c *Call) appPool() bool { return c.F.N == 1 && !c.g.cfg.Knobs.NoAppPool }

// onAppOr runs app, a statement on the app's pool, when the call may use
// it (want, the file the library opened first, the app using none of the
// pool's connections and one idle, not suspended); else, once the app
// left its pool, or while another call's statement runs there, own on
// the call's reader.
func (c *Call) onAppOr(ctx context.Context, want bool, app func() error, own func(*store.Conn) error) error {
	if want && c.appPool() && c.F.St.AppFree() {
		c.PutReader() // one connection at a time (ARCHITECTURE.md, the lock order)
		if err := app(); !errors.Is(err, store.ErrAppLeft) && !errors.Is(err, store.ErrAppBusy) {
			return err
		}
	}
	conn, err := c.Reader(ctx)
	if err != nil {
		return err
	}
	return own(conn)
}

// withSpellings returns the keys at positions at, then the spellings sv
// (nil: none) and more (logged beyond sv's mark, or walked) know of them;
// owner[j] is the position in keys of the key list[j] asks about.
func withSpellings(keys []string, at []int, sv *View, more map[string][]string) (list []string, owner []int) {
	list, owner = make([]string, len(at)), make([]int, len(at))
	for j, i := range at {
		list[j], owner[j] = keys[i], i
	}
	if sv == nil && more == nil {
		return list, owner
	}
	for _, i := range at {
		if !maySpell(keys[i]) { // byte for byte, sv holds no spellings
			continue
		}
		if sv != nil {
			for _, s := range sv.Spellings(keys[i]) {
				list, owner = append(list, s), append(owner, i)
			}
		}
		for _, s := range more[keys[i]] {
			list, owner = append(list, s), append(owner, i)
		}
	}
	return list, owner
}

// AnswerOne answers one canonical key that has no other spelling
// (!MaySpell) with one lookup of the key itself: exact without the log,
// the filter or the stored spellings, and no dearer than the probe the
// filter's "absent" would need first.
func (c *Call) AnswerOne(ctx context.Context, key string) (bool, error) {
	if c.g.spells(key) || c.b.src.OwnMissing || c.g.cfg.Knobs.NoLookup {
		found, err := c.Answer(ctx, []string{key})
		if err != nil {
			return false, err
		}
		return found[0], nil
	}
	return retry(func() (bool, error) {
		var found bool
		err := c.onAppOr(ctx, true, func() (err error) {
			found, err = c.F.St.AppLookup(ctx, c.b.src, key)
			return err
		}, func(conn *store.Conn) (err error) {
			found, err = conn.Lookup(ctx, c.b.src, key)
			return err
		})
		if err != nil {
			return false, c.orMoved(ctx, err)
		}
		c.g.count([]uint8{bySQLite}, []bool{found})
		return found, nil
	})
}
