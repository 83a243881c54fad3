package rebuild

import (
	"sync/atomic"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// This file is the index's state machine: every change of what the index
// is doing happens here, under Index.mu, which is held only to swap the
// state (never across SQL, a filter insert, a callback or a wait). The
// filter a transition takes out of the state is returned to the caller,
// which closes it after unlocking: each filter is closed exactly once, by
// the transition that retired it.
//
//	transition        from                  to               returned to close
//	startRebuilding   serving(F)            rebuilding(F)
//	                  bypass                rebuilding(-)
//	publish(F')       rebuilding(F or -)    serving(F')      F
//	restore           rebuilding(F)         serving(F)
//	                  rebuilding(-)         bypass
//	install(F')       bypass, serving(F)    serving(F')      F
//	                  rebuilding(F or -)    rebuilding(F')   F
//	drop(F)           serving(F)            bypass           F
//	                  rebuilding(F)         rebuilding(-)    F
//	toClosed          any                   closed           the filter held
//
// A rebuild (one per index at a time: its turn) runs startRebuilding, then
// publish or restore; install is a load of the snapshot (the worker's load
// job, Reload), which may land during a rebuild; drop is a probe or a
// refill that finds the filter no longer covers the source; toClosed is
// Index.final. In the closed state publish and install refuse (the caller
// closes F') and startRebuilding fails. docs/ARCHITECTURE.md draws the
// same.
//
// A filter in the state is not trusted by its presence alone: every
// call checks that it covers the source as the call reads it (file,
// source row, epoch) and that the log still holds what it read (its
// mark's tag), and takes the log's newer entries in first (probe.go).

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

// mark is how far a filter (or the stored spellings) has read the log:
// every entry with seq <= gen, the one at gen tagged tag (0: the log was
// empty, or the tag is not known: nothing at gen to check).
type mark struct {
	gen uint64
	tag int64
}

// logMark is a mark that only moves forward, read and raised lock-free.
type logMark struct{ p atomic.Pointer[mark] }

// get returns the mark; the zero mark before any set.
func (l *logMark) get() mark {
	if m := l.p.Load(); m != nil {
		return *m
	}
	return mark{}
}

// gen returns the mark's generation.
func (l *logMark) gen() uint64 { return l.get().gen }

// raise moves the mark to m if m is further; it reports whether it did.
func (l *logMark) raise(m mark) bool {
	for {
		old := l.p.Load()
		if old != nil && old.gen >= m.gen {
			return false
		}
		if l.p.CompareAndSwap(old, &m) {
			return true
		}
	}
}

// set replaces the mark, backwards too (a refill re-reads the log).
func (l *logMark) set(m mark) { l.p.Store(&m) }

// serving is a filter and what it covers: every key logged up to its mark
// in the log of source src, epoch epoch, of the database file file.
type serving struct {
	id       uint64 // unique in the process (newID)
	f        *syncfilter.Filter
	capacity uint64 // keys it was sized for
	at       logMark
	file     *file         // compared, and used only while a call holds a reference
	src      *store.Source // the source as attached when it was built
	epoch    uint64
	rows     int64     // rows of the source when it was built (0 for a loaded snapshot: unknown)
	built    time.Time // when it was built or loaded

	checkedOnes atomic.Uint64 // bits set when checkDue last scanned f (autorebuild.go)
	floor       atomic.Uint64 // the log's floor when it last read the log: a refill needs the log not compacted since
	suspect     atomic.Bool   // the log no longer holds what it read (a restore in place): not trusted until refilled
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
func (ix *Index) get() *state { return ix.mu.state.Load() }

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
		ix.mu.state.Store(&state{mode: modeRebuilding, filter: st.filter})
	default:
		ix.mu.state.Store(&state{mode: modeRebuilding})
	}
	return true
}

// publish ends a rebuild: s answers, and the filter it replaces is
// returned to close. false if the index closed meanwhile (the caller
// closes s).
func (ix *Index) publish(s *serving) (prev *serving, ok bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	st := ix.get()
	if st.mode == modeClosed {
		return nil, false
	}
	ix.mu.state.Store(&state{mode: modeServing, filter: s})
	return st.filter, true
}

// install makes s, read from a snapshot file, the filter: it answers, or,
// during a rebuild, waits to be restored if the rebuild fails. It returns
// the filter it replaces, to close; false if the index closed meanwhile
// (the caller closes s).
func (ix *Index) install(s *serving) (prev *serving, ok bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	st := ix.get()
	switch st.mode {
	case modeClosed:
		return nil, false
	case modeRebuilding: // the rebuild publishes its own; this one is restored if it fails
		ix.mu.state.Store(&state{mode: modeRebuilding, filter: s})
	default:
		ix.mu.state.Store(&state{mode: modeServing, filter: s})
	}
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
		ix.mu.state.Store(&state{mode: modeServing, filter: st.filter})
		return
	}
	ix.mu.state.Store(&state{mode: modeBypass})
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
		ix.mu.state.Store(&state{mode: modeBypass})
	case modeRebuilding:
		ix.mu.state.Store(&state{mode: modeRebuilding})
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
	ix.mu.state.Store(&state{mode: modeClosed})
	return prev
}

// dropFilter stops trusting s (if the state still holds it), closes it
// and, unless the app rebuilds by itself, asks for a rebuild.
func (ix *Index) dropFilter(s *serving, why error) {
	if ix.retire(s, why) {
		ix.askRepair(why.Error())
	}
}

// retire stops trusting s (if the state still holds it) and closes it,
// noting why; false if the state no longer held it.
func (ix *Index) retire(s *serving, why error) bool {
	if s == nil {
		return false
	}
	prev := ix.drop(s)
	if prev == nil {
		return false
	}
	_ = prev.f.Close()
	ix.m.drops.Add(1)
	// The reason first, then the rebuild: the rebuild's outcome replaces
	// it (a rebuild that ends at once must not have its success
	// overwritten by the reason, which Wait would return).
	ix.m.setError(why)
	return true
}
