package gate

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// The gate's state machine. Every change of what a collection is doing
// happens here, under Gate.mu, held only to swap the state (never across
// SQL, a filter insert or a wait). The view a transition takes out of the
// state is returned to the caller, which closes it: each filter is closed
// exactly once, by whoever retired it.
//
//	transition   from                        to                   returned
//	Rebuilding   serving(V), bypass(V or -)  rebuilding(V or -)
//	Publish(V')  rebuilding(V or -)          serving(V')          V
//	Restore      rebuilding(V)               serving(V) or bypass(V) (no filter)
//	Install(V')  serving(V), bypass(V or -)  serving(V')          V
//	Spellings(V) bypass, rebuilding          the same mode, V      the view it replaced
//	Drop(V)      any holding V               the same mode, no view   V
//	Close        any                         closed               the view held
//
// One job of an index runs at a time (the database's worker), so no
// Install meets a rebuild. A view in the state is not trusted by its
// presence alone: every call checks that it covers the source as the
// call reads it and takes the log's newer entries in first.

// Mode is what the collection is doing.
type Mode uint8

const (
	Bypass     Mode = iota // no filter: every key goes to SQLite
	Serving                // a view's filter rules keys out
	Rebuilding             // bypass while a new filter is built
	Closed
)

func (m Mode) String() string { return [...]string{"bypass", "serving", "rebuilding", "closed"}[m] }

// state is stored once and never changed.
type state struct {
	mode Mode
	view *View // serving: the one answering; otherwise the stored spellings, and a filter to restore
}

// Mark is how far a view has read the log: every entry with seq <= Gen,
// the one at Gen tagged Tag (0: nothing to check there).
type Mark struct {
	Gen uint64
	Tag int64
}

// View is what a call may trust about one source in one file: a filter
// (nil for a view of the stored spellings alone) and the stored spellings
// that are not NFC, both caught up on the log to one mark.
type View struct {
	ID    uint64
	F     *syncfilter.Filter // nil: spellings only
	File  *File
	Src   *store.Source
	Epoch uint64
	// SpTable: the spellings table holds every stored non-NFC spelling
	// logged up to the view's first mark; else the set was read from the
	// source's table.
	SpTable  bool
	Capacity uint64        // keys F was sized for
	Rows     int64         // rows when it was built (0: loaded)
	Built    time.Time     // when it was built or loaded
	DV       store.Changes // unlogged sources: data_version when the table was read

	mark atomic.Pointer[Mark]
	sp   atomic.Pointer[map[string][]string] // canonical form → stored spellings; replaced, never changed
	Due  atomic.Uint64                       // bits set when the fill was last judged (upkeep)
}

// NewView returns a view at mark m with the spellings sp.
func NewView(f *syncfilter.Filter, file *File, src *store.Source, epoch uint64, m Mark, spTable bool) *View {
	v := &View{ID: NewID(), F: f, File: file, Src: src, Epoch: epoch, SpTable: spTable, Built: time.Now()}
	v.mark.Store(&m)
	return v
}

// Mark returns how far the view has read the log.
func (v *View) Mark() Mark { return *v.mark.Load() }

// raise moves the mark to m if m is further.
func (v *View) raise(m Mark) bool {
	for {
		old := v.mark.Load()
		if old.Gen >= m.Gen {
			return false
		}
		if v.mark.CompareAndSwap(old, &m) {
			return true
		}
	}
}

// Spellings returns the stored spellings of a canonical key the view knows.
func (v *View) Spellings(canon string) []string {
	if m := v.sp.Load(); m != nil {
		return (*m)[canon]
	}
	return nil
}

// AllSpellings returns every spelling the view knows, as (canonical, stored).
func (v *View) AllSpellings() [][2]string {
	var out [][2]string
	if m := v.sp.Load(); m != nil {
		for c, list := range *m {
			for _, s := range list {
				out = append(out, [2]string{c, s})
			}
		}
	}
	return out
}

// AddSpellings notes stored spellings (canonical, stored). Rare: a new
// map is made each time, so that readers take no lock.
func (v *View) AddSpellings(pairs [][2]string) {
	for len(pairs) > 0 {
		old := v.sp.Load()
		m := map[string][]string{}
		if old != nil {
			for c, l := range *old {
				m[c] = l
			}
		}
		for _, p := range pairs {
			if !slices.Contains(m[p[0]], p[1]) {
				m[p[0]] = append(slices.Clip(m[p[0]]), p[1])
			}
		}
		if v.sp.CompareAndSwap(old, &m) {
			return
		}
	}
}

// Covers reports whether v is a view of src (as resolved in f) at epoch.
func (v *View) Covers(f *File, src *store.Source, epoch uint64) bool {
	return v.File == f && v.Src.ID == src.ID && v.Src.DatasetID == src.DatasetID && v.Epoch == epoch
}

// Close closes the view's filter (nothing for a spellings view).
func (v *View) Close() {
	if v != nil && v.F != nil {
		_ = v.F.Close()
	}
}

var lastID atomic.Uint64

// NewID returns a number never returned before in this process: views,
// bindings and gates are named by number where nothing may be kept alive.
func NewID() uint64 { return lastID.Add(1) }

func (g *Gate) get() *state { return g.state.Load() }

// Mode returns what the collection is doing.
func (g *Gate) Mode() Mode { return g.get().mode }

// Serving returns the view whose filter answers, or nil.
func (g *Gate) Serving() *View {
	if st := g.get(); st.mode == Serving {
		return st.view
	}
	return nil
}

// Held returns the view the state holds, serving or not.
func (g *Gate) Held() *View { return g.get().view }

func (g *Gate) swap(fn func(st *state) (*state, *View)) *View {
	g.mu.Lock()
	defer g.mu.Unlock()
	next, out := fn(g.get())
	if next != nil {
		g.state.Store(next)
	}
	return out
}

// Rebuilding enters the rebuilding mode; false once closed.
func (g *Gate) Rebuilding() bool {
	ok := false
	g.swap(func(st *state) (*state, *View) {
		if st.mode == Closed {
			return nil, nil
		}
		ok = true
		return &state{mode: Rebuilding, view: st.view}, nil
	})
	return ok
}

// Publish makes v answer and returns the view it replaces; ok is false
// once closed (the caller closes v).
func (g *Gate) Publish(v *View) (prev *View, ok bool) {
	prev = g.swap(func(st *state) (*state, *View) {
		if st.mode == Closed {
			return nil, nil
		}
		ok = true
		return &state{mode: Serving, view: v}, st.view
	})
	return prev, ok
}

// Install is Publish for a view loaded outside a rebuild.
func (g *Gate) Install(v *View) (prev *View, ok bool) { return g.Publish(v) }

// Restore ends a failed rebuild: the view held serves again if it has a
// filter.
func (g *Gate) Restore() {
	g.swap(func(st *state) (*state, *View) {
		if st.mode != Rebuilding {
			return nil, nil
		}
		if st.view != nil && st.view.F != nil {
			return &state{mode: Serving, view: st.view}, nil
		}
		return &state{mode: Bypass, view: st.view}, nil
	})
}

// SetSpellings holds v, a view of the stored spellings alone, in place of
// old (nil, or a view that cannot serve the source as it is now), unless
// a filter serves or the state changed; false then (the caller drops v).
func (g *Gate) SetSpellings(v, old *View) bool {
	ok := false
	g.swap(func(st *state) (*state, *View) {
		if st.view != old || st.mode == Serving || st.mode == Closed {
			return nil, nil
		}
		ok = true
		return &state{mode: st.mode, view: v}, nil
	})
	if ok {
		old.Close()
	}
	return ok
}

// Drop stops holding v, if the state still holds it, and returns it to
// close (nil if it did not).
func (g *Gate) Drop(v *View) *View {
	return g.swap(func(st *state) (*state, *View) {
		if v == nil || st.view != v || st.mode == Closed {
			return nil, nil
		}
		mode := st.mode
		if mode == Serving {
			mode = Bypass
		}
		return &state{mode: mode}, v
	})
}

// Close enters the closed mode and returns the view held.
func (g *Gate) Close() *View {
	return g.swap(func(st *state) (*state, *View) {
		return &state{mode: Closed}, st.view
	})
}
