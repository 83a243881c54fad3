package rebuild

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/syncfilter/syncfilter/syncfilter"
)

// This file is the index's state machine: every change of what the index
// is doing happens here, under Index.mu.
//
//	            Open (snapshot loaded, or first scan)
//	                 │
//	  ┌──────────► serving(F) ──── catch-up impossible ───► bypass
//	  │              │  ▲                                     │
//	  │      Rebuild │  │ scan failed: F again                │ Rebuild
//	  │              ▼  │                                     ▼
//	  └─ publish ── rebuilding ◄──────────────────────────────┘
//	                 │ scan failed, no F
//	                 └──────────────► bypass
//
//	any state ── Close ──► closed
//
// Reload replaces F by the snapshot's filter: serving(F) → serving(F').

// mode is what the index is doing.
type mode uint8

const (
	modeBypass     mode = iota // no filter: every query goes to SQLite
	modeServing                // a filter answers, caught up before every answer
	modeRebuilding             // bypass while a new filter is built; covers are queued for it
	modeClosed
)

func (m mode) String() string {
	return [...]string{"bypass", "serving", "rebuilding", "closed"}[m]
}

// state is what the index is doing, with what belongs to that mode. A
// value is stored once and never reassigned; the things it points to
// carry their own guards (serving.mu, bypassLog.mu), and pending is read
// and appended only under Index.mu.
type state struct {
	mode    mode
	filter  *serving   // modeServing: the filter answering
	log     *bypassLog // modeBypass, modeRebuilding: how far the aliases were noted
	pending []string   // modeRebuilding: canonical keys covered since the rebuild began
}

// serving is a published filter and how much of the log it covers.
type serving struct {
	f           *syncfilter.Filter
	capacity    uint64        // keys the filter was sized for
	mu          sync.Mutex    // serializes catch-up of this filter
	gen         atomic.Uint64 // every log entry with seq <= gen is in f
	checkedOnes atomic.Uint64 // bits set when checkDue last scanned f (auto.go)
}

// bypassLog is the catch-up point of a bypass: with no filter to insert
// into, only the alias table needs the log, so that confirmations find
// non-NFC spellings.
type bypassLog struct {
	mu  sync.Mutex // serializes alias catch-up; guards gen
	gen uint64     // log entries up to here had their aliases noted
}

func newBypassLog(gen uint64) *bypassLog { return &bypassLog{gen: gen} }

// get returns the current state; never nil.
func (ix *Index) get() *state { return ix.state.Load() }

// filter returns the serving filter, or nil.
func (ix *Index) filter() *serving {
	if st := ix.get(); st.mode == modeServing {
		return st.filter
	}
	return nil
}

// set stores the next state; callers hold ix.mu.
func (ix *Index) set(st *state) { ix.state.Store(st) }

// cover hands canonical keys to the serving filter and returns once its
// writer set their bits; while a rebuild runs it queues them for the new
// filter instead. Holding mu orders covers against every transition: no
// key is covered into a filter that is being replaced after its
// replacement took the queue.
func (ix *Index) cover(ctx context.Context, canon []string) error {
	s, err := ix.coverLocked(ctx, canon)
	if err == nil {
		ix.checkDue(s) // after mu is released: a rebuild may start
	}
	return err
}

func (ix *Index) coverLocked(ctx context.Context, canon []string) (*serving, error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	switch st := ix.get(); st.mode {
	case modeServing:
		return st.filter, st.filter.f.AddBatch(ctx, canon)
	case modeRebuilding:
		st.pending = append(st.pending, canon...)
	}
	return nil, nil
}

// startRebuilding enters modeRebuilding and returns the filter that was
// serving (nil from bypass). Rebuilds do not overlap (rebuildMu).
func (ix *Index) startRebuilding() *serving {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	st := ix.get()
	next := &state{mode: modeRebuilding, log: st.log}
	if st.mode == modeServing {
		next.log = newBypassLog(st.filter.gen.Load())
	}
	ix.set(next)
	return st.filter
}

// publish makes s the filter that answers: first, without blocking
// covers, it catches up on the bulk of the log since its generation; then,
// under mu, on the keys covered meanwhile and the last log entries, and
// stores the new state.
func (ix *Index) publish(ctx context.Context, s *serving) error {
	if head, floor, err := ix.st.head(ctx); err != nil {
		return err
	} else if err := ix.catchUp(ctx, s, head, floor); err != nil {
		return err
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	st := ix.get()
	if st.mode == modeClosed {
		return ErrClosed
	}
	if err := s.f.AddBatch(ctx, st.pending); err != nil {
		return err
	}
	head, floor, err := ix.st.head(ctx)
	if err != nil {
		return err
	}
	if err := ix.catchUp(ctx, s, head, floor); err != nil {
		return err
	}
	ix.set(&state{mode: modeServing, filter: s})
	return nil
}

// restore ends a failed rebuild: prev serves again, with the keys covered
// meanwhile; with no previous filter (or one that cannot take them) the
// index stays in bypass.
func (ix *Index) restore(ctx context.Context, prev *serving) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	st := ix.get()
	if st.mode != modeRebuilding {
		return
	}
	if prev != nil {
		if err := prev.f.AddBatch(context.WithoutCancel(ctx), st.pending); err == nil {
			ix.set(&state{mode: modeServing, filter: prev})
			return
		}
		_ = prev.f.Close() // cannot vouch for it
	}
	ix.set(&state{mode: modeBypass, log: st.log})
}

// drop stops trusting s (if it still serves) and, unless the app
// schedules its own, starts a rebuild in the background.
func (ix *Index) drop(s *serving) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if st := ix.get(); st.mode != modeServing || st.filter != s {
		return
	}
	ix.set(&state{mode: modeBypass, log: newBypassLog(s.gen.Load())})
	if !ix.cfg.NoBackgroundRebuild {
		ix.startBackground()
	}
}

// testHookBackground, when set by tests, runs at the start of every
// background goroutine.
var testHookBackground func()

// startBackground starts a rebuild on a goroutine owned by the index.
// Callers hold mu, which Close takes to set closing before it waits for
// background work: nothing starts after Close stopped waiting.
func (ix *Index) startBackground() {
	if ix.closing {
		return
	}
	ix.bg.Add(1)
	go func() {
		defer ix.bg.Done()
		if testHookBackground != nil {
			testHookBackground()
		}
		defer ix.markReady()
		_ = ix.Rebuild(ix.ctx) // the error is kept in the metrics
	}()
}

// beginClose marks the index as closing (no background work starts from
// now on) and reports whether this call is the first.
func (ix *Index) beginClose() bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closing {
		return false
	}
	ix.closing = true
	return true
}

// finishClose enters modeClosed and returns the filter that was serving.
// Callers hold lifeMu exclusively: no call is in progress.
func (ix *Index) finishClose() *serving {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	prev := ix.filter()
	ix.set(&state{mode: modeClosed})
	return prev
}
