package rebuild

import (
	"context"
	"sync"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// The follower keeps the filters of the indexes in use current between
// calls, in the time a sync engine waits on the network. A sync stores
// each page's new records right after asking about it; the next call
// would otherwise take those log entries in before it could trust the
// filter's "absent". So after a call, for a while as long as a few of the
// app's recent pauses between calls, the follower watches PRAGMA
// data_version (one statement of a few microseconds, on a connection of
// its own that never writes: its value changes exactly when another
// connection commits), polling every millisecond for the first few
// milliseconds after a call or a commit (when the app stores a page's
// records) and backing off to every pollSlowest; when a commit changes
// it, the follower runs, for each index called within the window, what a
// call would before trusting its filter (Index.catchUp: the probe,
// catch-up, a migration seen). A call only notes itself (no wake-up of
// the goroutine, which would cost the call a thread's wake-up): the
// goroutine sees the call at its next poll, at most pollSlowest later,
// and polls fast again. Once the window passes without a call, it stops:
// an idle database runs nothing. Suspend stops it at once.
type follower struct {
	db *DB
	mu struct {
		sync.Mutex                      // guards the fields below
		running    bool                 // the goroutine runs
		until      time.Time            // it stops at this time if no call comes
		calls      map[*Index]time.Time // the indexes called in the window, and when
		last       time.Time            // the last call
		gap        time.Duration        // the app's pauses between calls, smoothed
		paused     bool                 // Suspend
		stopped    chan struct{}        // closed when the goroutine ends
		cancel     context.CancelFunc   // interrupts the goroutine's catch-up (Suspend)
		kick       chan struct{}        // capacity 1: look at the state now (Suspend, Close)
	}
}

// Bounds of the follower's window and of its polling.
const (
	followMin   = 250 * time.Millisecond
	followMax   = 5 * time.Second
	followPolls = 4 // the window is this many of the app's pauses between calls
	pollFirst   = time.Millisecond
	pollSteady  = 8 // polls at pollFirst after a call or a commit, before backing off
	pollSlowest = 4 * time.Millisecond
)

func (f *follower) init(db *DB) {
	f.db = db
	f.mu.calls = map[*Index]time.Time{}
	f.mu.kick = make(chan struct{}, 1)
}

// called notes a call of ix and starts the goroutine if it does not run
// (unless a test turned it off).
func (f *follower) called(ix *Index) {
	if f.db.cfg.knobs.noFollow {
		return
	}
	now := time.Now()
	f.mu.Lock()
	if f.mu.paused || f.db.life.ctx.Err() != nil {
		f.mu.Unlock()
		return
	}
	if !f.mu.last.IsZero() {
		gap := now.Sub(f.mu.last)
		f.mu.gap = (3*f.mu.gap + gap) / 4
	}
	f.mu.last = now
	f.mu.calls[ix] = now
	f.mu.until = now.Add(min(followMax, max(followMin, followPolls*f.mu.gap)))
	start := !f.mu.running && f.db.life.Enter()
	var ctx context.Context
	if start {
		f.mu.running = true
		ctx, f.mu.cancel = context.WithCancel(f.db.life.ctx)
	}
	f.mu.Unlock()
	if start {
		go f.run(ctx)
	}
}

// forget drops a closed index.
func (f *follower) forget(ix *Index) {
	f.mu.Lock()
	delete(f.mu.calls, ix)
	f.mu.Unlock()
}

// wake makes the goroutine look at its state at once (Suspend, Close).
func (f *follower) wake() {
	select {
	case f.mu.kick <- struct{}{}:
	default:
	}
}

// run is the follower's goroutine; db.life counts it.
func (f *follower) run(ctx context.Context) {
	defer f.db.life.Leave()
	poll, steady := pollFirst, 0
	var seen store.Changes
	var lastCall time.Time
	known := false
	timer := time.NewTimer(poll)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
		case <-timer.C:
		case <-f.mu.kick:
		}
		if k := f.db.cfg.knobs.followPoll; k != nil {
			k()
		}
		indexes, last, stop := f.due(ctx)
		if stop {
			return
		}
		if last.After(lastCall) {
			lastCall = last
			poll, steady = pollFirst, 0 // a call came: the app writes again soon
		}
		if dv, err := f.dataVersion(ctx); err == nil && (!known || dv != seen) {
			seen, known = dv, true
			for _, ix := range indexes {
				ix.catchUp(ctx)
			}
			poll, steady = pollFirst, 0
		} else if steady++; steady >= pollSteady {
			poll = min(2*poll, pollSlowest)
		}
		timer.Reset(poll)
	}
}

// due returns the indexes to follow now and when the last call came, or
// stop: the window passed,
// the database is suspended or closing, or the goroutine's own ctx ended
// (a Suspend that stopped waiting for it, then a Resume: a goroutine of
// a new window starts with the next call). The goroutine then ends.
func (f *follower) due(ctx context.Context) (list []*Index, last time.Time, stop bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	if f.mu.paused || ctx.Err() != nil || f.db.life.ctx.Err() != nil || now.After(f.mu.until) {
		f.mu.running = false
		f.mu.cancel()
		if f.mu.stopped != nil {
			close(f.mu.stopped)
			f.mu.stopped = nil
		}
		clear(f.mu.calls)
		return nil, time.Time{}, true
	}
	for ix := range f.mu.calls {
		list = append(list, ix)
	}
	return list, f.mu.last, false
}

// dataVersion reads PRAGMA data_version of the file now at the path.
func (f *follower) dataVersion(ctx context.Context) (store.Changes, error) {
	file := f.db.cur.Load()
	if file == nil || !file.acquire() {
		return store.Changes{}, ErrClosed
	}
	defer file.release()
	return file.st.DataVersion(ctx)
}

// pause stops the goroutine and waits for it until ctx ends, and reports
// whether it ended; calls do not start it again until resume.
func (f *follower) pause(ctx context.Context) bool {
	f.mu.Lock()
	f.mu.paused = true
	if !f.mu.running {
		f.mu.Unlock()
		return true
	}
	if f.mu.stopped == nil {
		f.mu.stopped = make(chan struct{})
	}
	stopped := f.mu.stopped
	f.mu.cancel()
	f.mu.Unlock()
	f.wake()
	select {
	case <-stopped:
		return true
	case <-ctx.Done():
		return false
	}
}

// resume lets calls start the follower again.
func (f *follower) resume() {
	f.mu.Lock()
	f.mu.paused = false
	f.mu.Unlock()
}
