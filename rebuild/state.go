package rebuild

import (
	"sync/atomic"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// This file is the index's state machine: every change of what the index
// is doing happens here, under Index.mu, which is held only to swap the
// state (never across SQL, a filter insert or a wait). The filter a
// transition takes out of the state is returned to the caller, which
// closes it after unlocking: each filter is closed exactly once, by the
// transition that retired it.
//
//	            open (snapshot loaded, or first scan)
//	                 │
//	  ┌──────────► serving(F) ── drop (source changed, log compacted,
//	  │              │  ▲        new file) ──► bypass
//	  │      rebuild │  │ rebuild failed: F again                │
//	  │              ▼  │                                        │ rebuild
//	  └─ publish ── rebuilding(F) ◄───────────────────────────────┘
//	                 │ rebuild failed, no F
//	                 └──────────────► bypass
//
//	serving(F) ── reload ──► serving(F')       any ── Close ──► closed

// mode is what the index is doing.
type mode uint8

const (
	modeBypass     mode = iota // no filter: every query goes to SQLite
	modeServing                // a filter answers, caught up before every answer
	modeRebuilding             // bypass while a new filter is built; the previous one waits to be restored
	modeClosed
)

func (m mode) String() string {
	return [...]string{"bypass", "serving", "rebuilding", "closed"}[m]
}

// state is what the index is doing. A value is stored once and never
// changed.
type state struct {
	mode   mode
	filter *serving // serving: the filter answering; rebuilding: the one to restore if the rebuild fails (may be nil)
}

// serving is a filter and what it covers: every key logged up to gen in
// the log of source src, epoch epoch, of the database file file.
type serving struct {
	id       uint64 // unique in the process (newServingID)
	f        *syncfilter.Filter
	capacity uint64        // keys it was sized for
	gen      atomic.Uint64 // every log entry with seq <= gen is in f
	file     *file         // compared, and used only while a call holds a reference
	src      *store.Source // the source as attached when it was built
	epoch    uint64
	rows     int64     // rows of the source when it was built (0 for a loaded snapshot: unknown)
	built    time.Time // when it was built or loaded

	checkedOnes atomic.Uint64 // bits set when checkDue last scanned f (autorebuild.go)

	// schema is the cookie of the schema f was last checked against the
	// log in (refill: a restore in place changes it), floor the log's
	// floor the last probe in that schema read.
	schema atomic.Int64
	floor  atomic.Uint64
}

// lastID numbers filters and indexes: a reading connection's notes
// (store.Conn.Note) name them by number, keeping nothing alive.
var lastID atomic.Uint64

// newID returns a number never returned before in this process.
func newID() uint64 { return lastID.Add(1) }

// covers reports whether s is a filter of the source as c sees it: the
// same file, source row, dataset (another database's content restored
// into the file has another) and epoch.
func (s *serving) covers(f *file, src *store.Source, epoch uint64) bool {
	return s.file == f && s.src.ID == src.ID && s.src.DatasetID == src.DatasetID && s.epoch == epoch
}

// get returns the current state; never nil.
func (ix *Index) get() *state { return ix.state.Load() }

// filter returns the serving filter, or nil.
func (ix *Index) filter() *serving {
	if st := ix.get(); st.mode == modeServing {
		return st.filter
	}
	return nil
}

// startRebuilding enters modeRebuilding, keeping the filter that served
// to restore it if the rebuild fails; false if the index is closed.
func (ix *Index) startRebuilding() bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	st := ix.get()
	switch st.mode {
	case modeClosed:
		return false
	case modeServing:
		ix.state.Store(&state{mode: modeRebuilding, filter: st.filter})
	default:
		ix.state.Store(&state{mode: modeRebuilding})
	}
	return true
}

// publish makes s the filter that answers and returns the one it replaces
// (to close), or reports false if the index closed meanwhile (the caller
// closes s).
func (ix *Index) publish(s *serving) (prev *serving, ok bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	st := ix.get()
	if st.mode == modeClosed {
		return nil, false
	}
	ix.state.Store(&state{mode: modeServing, filter: s})
	return st.filter, true
}

// restore ends a failed rebuild: the previous filter serves again (the
// next query checks that it still covers the source), or the index stays
// in bypass.
func (ix *Index) restore() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	st := ix.get()
	if st.mode != modeRebuilding {
		return
	}
	if st.filter != nil {
		ix.state.Store(&state{mode: modeServing, filter: st.filter})
		return
	}
	ix.state.Store(&state{mode: modeBypass})
}

// drop stops trusting s if it still serves (or waits to be restored) and
// returns it to close, or nil if it no longer is in the state.
func (ix *Index) drop(s *serving) *serving {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	st := ix.get()
	if st.filter != s || s == nil {
		return nil
	}
	switch st.mode {
	case modeServing:
		ix.state.Store(&state{mode: modeBypass})
	case modeRebuilding:
		ix.state.Store(&state{mode: modeRebuilding})
	default:
		return nil
	}
	return s
}

// toClosed enters modeClosed and returns the filter the state held.
func (ix *Index) toClosed() *serving {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	prev := ix.get().filter
	ix.state.Store(&state{mode: modeClosed})
	return prev
}

// dropFilter stops trusting s (if the state still holds it), closes it and,
// unless the app rebuilds by itself, asks for a rebuild.
func (ix *Index) dropFilter(s *serving, why error) {
	if s == nil {
		return
	}
	prev := ix.drop(s)
	if prev == nil {
		return
	}
	_ = prev.f.Close()
	ix.m.drops.Add(1)
	// The reason first, then the rebuild: the rebuild's outcome replaces
	// it (asked first, a rebuild that ended at once had its success
	// overwritten by the reason, and Wait returned it).
	ix.m.setError(why)
	if !ix.cfg.AutoRebuild.Off && !ix.db.cfg.ReadOnly {
		ix.askRebuild(why.Error())
	}
}
