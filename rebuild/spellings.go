package rebuild

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/rebuild/internal/work"
)

// Stored spellings. Keys are compared in NFC, but the app may store an id
// in another spelling (NFD, say, or with a KELVIN SIGN whose NFC is the
// ASCII "K"). A confirmation finds such a row through the stored
// spellings the library knows: the spellings table
// (syncfilter_spellings_<n>), which a full scan fills and which is
// complete up to a generation the database records (Head.SpellingsGen),
// and, beyond it, a set in memory of the spellings logged since, kept by
// every index of the source (reading the log is a read path: it never
// writes the spellings table; Save and Rebuild do, and move
// SpellingsGen on).
//
// When no complete spellings table vouches (a source never attached, open
// read-only; or one attached again after the app's migration dropped its
// triggers, until the rebuild completes), the set starts from a scan of
// the table's keys that hold a character outside ASCII (or a NUL): only
// they can be stored in a form other than NFC.

// spellings is an index's stored spellings: the current set, the flight
// that builds a new one, and whether the spellings table had a row at the
// last probe (a confirmation then looks in it too).
type spellings struct {
	cur   atomic.Pointer[spellingSet]
	build work.Flight
	table atomic.Bool
}

// spellingSet is a set of stored non-NFC spellings by canonical form,
// covering either the log after base (table: the spellings table is
// complete up to base) or the table as scanned at base plus the log
// after it.
type spellingSet struct {
	f     *file         // compared, not used
	srcID int64         // 0: the source has no row (never attached)
	epoch uint64        //
	table bool          // the spellings table covers everything up to base
	dv    store.Changes // unlogged sources: PRAGMA data_version when the table was scanned
	base  uint64
	at    logMark // the log read up to here

	mu     sync.RWMutex // guards m
	m      map[string][]string
	filled atomic.Bool // m has an entry
}

func newSpellingSet(f *file, srcID int64, epoch uint64, table bool, base mark) *spellingSet {
	m := &spellingSet{f: f, srcID: srcID, epoch: epoch, table: table, base: base.gen, m: map[string][]string{}}
	m.at.set(base)
	return m
}

// add notes stored spellings (canonical, stored).
func (m *spellingSet) add(pairs [][2]string) {
	if len(pairs) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range pairs {
		if !slices.Contains(m.m[p[0]], p[1]) {
			m.m[p[0]] = append(m.m[p[0]], p[1])
		}
	}
	m.filled.Store(true)
}

// of returns the stored spellings of canon the set knows.
func (m *spellingSet) of(canon string) []string {
	if m == nil || !m.filled.Load() {
		return nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.m[canon]
}

// pairs returns every spelling noted.
func (m *spellingSet) pairs() [][2]string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out [][2]string
	for c, list := range m.m {
		for _, s := range list {
			out = append(out, [2]string{c, s})
		}
	}
	return out
}

// fits reports whether m is a set of source srcID in file f.
func (m *spellingSet) fits(f *file, srcID int64) bool {
	return m.f == f && m.srcID == srcID && srcID != 0
}

// fitsHead reports whether m serves a logged source at head h: same
// epoch, same kind (spellings table complete or not), and still able to
// read the log from its generation on.
func (m *spellingSet) fitsHead(f *file, srcID int64, h store.Head) bool {
	return m.fits(f, srcID) && m.epoch == h.Epoch && m.table == h.Scanned && m.at.gen() >= h.Floor
}

// drop forgets m, if it is still the index's set.
func (sp *spellings) drop(m *spellingSet) { sp.cur.CompareAndSwap(m, nil) }

// tableSpellings returns the set of a source that no log vouches for: the
// spellings found by scanning the table's keys that may be stored in
// another spelling, again whenever something committed since (PRAGMA
// data_version: O(rows) each time; only for a source never attached, or
// whose triggers are being put back).
func (ix *Index) tableSpellings(ctx context.Context, c *call) (*spellingSet, error) {
	dv, err := c.f.st.DataVersion(ctx)
	if err != nil {
		return nil, err
	}
	return ix.spellingsFor(ctx, c,
		func(m *spellingSet) bool { return m.f == c.f && !m.table && m.srcID == 0 && m.dv == dv },
		func() (*spellingSet, error) {
			m := newSpellingSet(c.f, 0, 0, false, mark{})
			m.dv = dv
			return m, ix.scanSpellings(ctx, c, m)
		})
}

// logSpellings returns the set of a logged source for the call's head
// (not yet caught up on the log: the probe does that).
func (ix *Index) logSpellings(ctx context.Context, c *call) (*spellingSet, error) {
	h, id := c.h, c.b.src.ID
	return ix.spellingsFor(ctx, c,
		func(m *spellingSet) bool { return m.fitsHead(c.f, id, h) },
		func() (*spellingSet, error) {
			if h.Scanned {
				// The spellings table is complete up to SpellingsGen; its
				// entry's tag is not known, so nothing is checked there.
				return newSpellingSet(c.f, id, h.Epoch, true, mark{gen: h.SpellingsGen}), nil
			}
			// Attached again and not scanned yet: the table as it is
			// now, then the log after the head read before the scan.
			m := newSpellingSet(c.f, id, h.Epoch, false, mark{gen: h.Seq, tag: h.Tag})
			return m, ix.scanSpellings(ctx, c, m)
		})
}

// spellingsFor returns the index's set once fits reports it right for
// the call, building a new one (build) in a flight when it is not: one
// caller builds, the others wait for it.
func (ix *Index) spellingsFor(ctx context.Context, c *call, fits func(*spellingSet) bool, build func() (*spellingSet, error)) (*spellingSet, error) {
	ok := func() bool { m := ix.sp.cur.Load(); return m != nil && fits(m) }
	for {
		if m := ix.sp.cur.Load(); m != nil && fits(m) {
			return m, nil
		}
		err := ix.sp.build.Do(ctx, ok, c.putReader, func() error {
			m, err := build()
			if err != nil {
				return err
			}
			ix.sp.cur.Store(m)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
}

// scanSpellings fills m from the table's keys that may be stored in
// another spelling.
func (ix *Index) scanSpellings(ctx context.Context, c *call, m *spellingSet) error {
	if f := ix.db.cfg.knobs.spellingScan; f != nil {
		f()
	}
	c.putReader() // the scan reads on a connection of its own
	var pairs [][2]string
	err := c.f.st.ScanSpellings(ctx, c.b.src, func(key string) error {
		if canon, err := canonicalStored(key); err == nil && canon != key {
			pairs = append(pairs, [2]string{canon, key})
		}
		return nil
	})
	if err != nil {
		return err
	}
	m.add(pairs)
	return nil
}
