package gate

import "sync/atomic"

// The gate's state machine: every change of what a collection is doing
// happens here, under Gate.mu, held only to swap the state. The view a
// transition takes out of the state is returned for the caller to close,
// so each filter is closed exactly once, by whoever retired it.
//
//	transition    from                     to                    returned
//	Rebuilding    any but closed           rebuilding, same view
//	Publish(V')   any but closed           serving(V')           the view held
//	Restore       rebuilding(V)            serving(V), or bypass(V) if V has no filter
//	SetSpellings  bypass or rebuilding     same mode, V'         the view it replaced
//	Drop(V)       any holding V            same mode, no view    V
//	Close         any                      closed                the view held
//
// One job of an index runs at a time (the worker), so nothing publishes
// during a rebuild but the rebuild. A view in the state is not trusted
// for its presence: every call checks it covers the source as the call
// reads it, and takes the log's newer entries in first.

// Mode is what the collection is doing.
type Mode uint8

const (
	Bypass     Mode = iota // no filter: every key goes to SQLite
	Serving                // a view's filter rules keys out
	Rebuilding             // bypass while a new filter is built
	Closed
)

// state is stored once and never changed.
type state struct {
	mode Mode
	view *View // serving: the one answering; else the stored spellings, and a filter to restore
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

// swap stores what fn returns, if not nil, and returns fn's view.
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
func (g *Gate) Rebuilding() (ok bool) {
	g.swap(func(st *state) (*state, *View) {
		if ok = st.mode != Closed; !ok {
			return nil, nil
		}
		return &state{mode: Rebuilding, view: st.view}, nil
	})
	return ok
}

// Publish makes v answer and returns the view it replaces; false once
// closed (the caller closes v).
func (g *Gate) Publish(v *View) (prev *View, ok bool) {
	prev = g.swap(func(st *state) (*state, *View) {
		if ok = st.mode != Closed; !ok {
			return nil, nil
		}
		return &state{mode: Serving, view: v}, st.view
	})
	return prev, ok
}

// Restore ends a failed rebuild: the view held serves again if it has a
// filter.
func (g *Gate) Restore() {
	g.swap(func(st *state) (*state, *View) {
		switch {
		case st.mode != Rebuilding:
			return nil, nil
		case st.view != nil && st.view.F != nil:
			return &state{mode: Serving, view: st.view}, nil
		}
		return &state{mode: Bypass, view: st.view}, nil
	})
}

// SetSpellings holds v, a view of the stored spellings alone, in place of
// old (nil, or one that cannot serve the source as it is now) and closes
// old; false if a filter serves or the state changed (the caller looks
// again).
func (g *Gate) SetSpellings(v, old *View) (ok bool) {
	g.swap(func(st *state) (*state, *View) {
		if ok = st.view == old && (st.mode == Bypass || st.mode == Rebuilding) && (old == nil || old.File.N <= v.File.N); !ok {
			return nil, nil
		}
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
	return g.swap(func(st *state) (*state, *View) { return &state{mode: Closed}, st.view })
}
