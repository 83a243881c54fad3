package rebuild

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// Stored spellings. Keys are compared in NFC, but the app may store an id
// in another spelling (NFD, say). A confirmation finds such a row through
// the spellings the library knows: the alias table (syncfilter_alias_<n>),
// which a full scan fills and which is complete up to a generation the
// database records (Head.AliasGen), and, beyond it, a memo in memory of the
// spellings logged since, kept by every index of the source (reading the
// log is a read path: it never writes the alias table; Save and Rebuild
// do, and move AliasGen on).
//
// When no complete alias table vouches (a source never attached, open
// read-only; or one attached again after the app's migration dropped its
// triggers, until the rebuild completes), the memo starts from a scan of
// the table's non-ASCII keys: only they can be stored in a form other
// than NFC.

// memo is a set of stored non-NFC spellings by canonical form, covering
// either the log after base (table: the alias table is complete up to
// base) or the table as scanned at base plus the log after it.
type memo struct {
	f      *file  // compared, not used
	srcID  int64  // 0: the source has no row (never attached)
	epoch  uint64 //
	table  bool   // the alias table covers everything up to base
	dv     int64  // unlogged sources: PRAGMA data_version when the table was scanned
	base   uint64
	schema int64         // logged sources: the schema cookie it was built in (a restore brings other spellings)
	gen    atomic.Uint64 // log entries up to gen were read
	mu     sync.RWMutex  // guards m
	m      map[string][]string
	filled atomic.Bool // m has an entry
}

func newMemo(f *file, srcID int64, epoch uint64, table bool, base uint64) *memo {
	m := &memo{f: f, srcID: srcID, epoch: epoch, table: table, base: base, m: map[string][]string{}}
	m.gen.Store(base)
	return m
}

// add notes stored spellings (canonical, stored).
func (m *memo) add(pairs [][2]string) {
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

// spellings returns the stored spellings of canon the memo knows.
func (m *memo) spellings(canon string) []string {
	if m == nil || !m.filled.Load() {
		return nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.m[canon]
}

// pairs returns every spelling noted.
func (m *memo) pairs() [][2]string {
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

// fits reports whether m is a memo of source srcID in file f.
func (m *memo) fits(f *file, srcID int64) bool {
	return m.f == f && m.srcID == srcID && srcID != 0
}

// fitsHead reports whether m serves a logged source at head h: same
// epoch, same kind (alias table complete or not), and still able to read
// the log from its generation on.
func (m *memo) fitsHead(f *file, srcID int64, h store.Head) bool {
	return m.fits(f, srcID) && m.epoch == h.Epoch && m.table == h.Scanned && m.gen.Load() >= h.Floor
}

// tableMemo returns the memo of a source that no log vouches for: the
// spellings found by scanning the table's non-ASCII keys, again whenever
// something committed since (PRAGMA data_version: O(rows) each time; only
// for a source never attached, or whose triggers are being put back).
func (ix *Index) tableMemo(ctx context.Context, c *call) (*memo, error) {
	dv, err := c.f.st.DataVersion(ctx)
	if err != nil {
		return nil, err
	}
	return ix.memoFor(ctx, c,
		func(m *memo) bool { return m.f == c.f && !m.table && m.srcID == 0 && m.dv == dv },
		func() (*memo, error) {
			m := newMemo(c.f, 0, 0, false, 0)
			m.dv = dv
			return m, ix.scanSpellings(ctx, c, m)
		})
}

// logMemo returns the memo of a logged source for the call's head (not
// yet caught up on the log: the probe does that).
func (ix *Index) logMemo(ctx context.Context, c *call) (*memo, error) {
	h, id := c.h, c.b.src.ID
	return ix.memoFor(ctx, c,
		func(m *memo) bool { return m.fitsHead(c.f, id, h) },
		func() (*memo, error) {
			if h.Scanned {
				m := newMemo(c.f, id, h.Epoch, true, h.AliasGen)
				m.schema = c.pr.Schema
				return m, nil
			}
			// Attached again and not scanned yet: the table as it is
			// now, then the log after the head read before the scan.
			m := newMemo(c.f, id, h.Epoch, false, h.Seq)
			m.schema = c.pr.Schema
			return m, ix.scanSpellings(ctx, c, m)
		})
}

// memoFor returns the index's memo once fits reports it right for the
// call, building a new one (build) in a flight when it is not: one caller
// builds, the others wait for it.
func (ix *Index) memoFor(ctx context.Context, c *call, fits func(*memo) bool, build func() (*memo, error)) (*memo, error) {
	ok := func() bool { m := ix.memo.Load(); return m != nil && fits(m) }
	for {
		if m := ix.memo.Load(); m != nil && fits(m) {
			return m, nil
		}
		err := ix.memoing.do(ctx, ok, c.putReader, func() error {
			m, err := build()
			if err != nil {
				return err
			}
			ix.memo.Store(m)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
}

// scanSpellings fills m from the table's non-ASCII keys.
func (ix *Index) scanSpellings(ctx context.Context, c *call, m *memo) error {
	conn, err := c.reader(ctx)
	if err != nil {
		return err
	}
	var pairs [][2]string
	err = conn.ScanNonASCII(ctx, c.b.src, func(key string) error {
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
