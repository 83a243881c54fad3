package upkeep

import (
	"context"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// The follower keeps the filters of the indexes in use current between
// calls, in the time a sync engine waits on the network: a sync stores
// each page's new records right after asking about it, and the next call
// would otherwise take those log entries in before it could trust the
// filter's "absent". After a call, for a window of a few of the app's
// pauses between calls, it polls PRAGMA data_version (a few microseconds,
// on a connection that never writes: the value moves exactly when another
// connection commits), every millisecond after a call or a commit,
// backing off to pollSlowest; when it moves, it catches up every index
// called in the window. It also attaches a source found without its
// triggers (asked by AskRebuild), so that the log holds the app's writes
// before the worker's turn comes for the scan. A call only notes itself: the goroutine sees it
// at its next poll. Once the window passes without a call, it ends.
type follow struct {
	running bool
	until   time.Time             // it ends at this time if no call comes
	calls   map[*Keeper]time.Time // the indexes called in the window
	last    time.Time             // the last call
	gap     time.Duration         // the app's pauses between calls, smoothed
	stopped chan struct{}         // closed when the goroutine ends (Suspend waits for it)
	cancel  context.CancelFunc    // interrupts its catch-up
}

const (
	followMin   = 250 * time.Millisecond
	followMax   = 5 * time.Second
	followPolls = 4 // the window is this many of the app's pauses between calls
	pollFirst   = time.Millisecond
	pollSteady  = 8 // polls at pollFirst after a call or a commit, before backing off
	pollSlowest = 4 * time.Millisecond
)

// called notes a call of k and starts the follower if it does not run.
func (db *DB) called(k *Keeper) {
	if db.Knobs.NoFollow {
		return
	}
	now := time.Now()
	db.mu.Lock()
	f := &db.mu.follow
	if db.mu.paused || db.ctx.Err() != nil {
		db.mu.Unlock()
		return
	}
	if !f.last.IsZero() {
		f.gap = (3*f.gap + now.Sub(f.last)) / 4
	}
	f.last, f.calls[k] = now, now
	lo := followMin
	if db.Knobs.FollowMin > 0 {
		lo = db.Knobs.FollowMin
	}
	f.until = now.Add(min(max(followMax, lo), max(lo, followPolls*f.gap)))
	var ctx context.Context
	var t, ok = db.life.Enter()
	start := !f.running && ok
	if start {
		f.running = true
		ctx, f.cancel = context.WithCancel(db.ctx)
	}
	db.mu.Unlock()
	if ok && !start {
		db.life.Leave(t)
	}
	if start {
		go func() {
			defer db.life.Leave(t)
			db.follow(ctx)
		}()
	}
}

// forget drops a closed index; the last one to go after the database's
// own work ended releases what the database holds.
func (db *DB) forget(k *Keeper) {
	db.mu.Lock()
	delete(db.mu.follow.calls, k)
	delete(db.mu.keepers, k)
	last := db.mu.ended && len(db.mu.keepers) == 0
	db.mu.Unlock()
	if last {
		db.release()
	}
}

// wake makes the follower look at its state at once.
func (db *DB) wake() {
	select {
	case db.kick <- struct{}{}:
	default:
	}
}

func (db *DB) follow(ctx context.Context) {
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
		case <-db.kick:
		}
		if k := db.Knobs.FollowPoll; k != nil {
			k()
		}
		keepers, last, stop := db.followed(ctx)
		if stop {
			return
		}
		if last.After(lastCall) {
			lastCall, poll, steady = last, pollFirst, 0 // a call came: the app writes again soon
		}
		for _, k := range keepers {
			k.attachNow(ctx)
		}
		if dv, err := db.dataVersion(ctx); err == nil && (!known || dv != seen) {
			seen, known = dv, true
			for _, k := range keepers {
				k.catchUp(ctx)
			}
			poll, steady = pollFirst, 0
		} else if steady++; steady >= pollSteady {
			poll = min(2*poll, pollSlowest)
		}
		timer.Reset(poll)
	}
}

// followed returns the indexes to follow and when the last call came, or
// stop: the window passed, or the database is suspended or closing.
func (db *DB) followed(ctx context.Context) (list []*Keeper, last time.Time, stop bool) {
	db.mu.Lock()
	defer db.mu.Unlock()
	f := &db.mu.follow
	if db.mu.paused || ctx.Err() != nil || time.Now().After(f.until) {
		f.running = false
		f.cancel()
		if f.stopped != nil {
			close(f.stopped)
			f.stopped = nil
		}
		clear(f.calls)
		return nil, time.Time{}, true
	}
	for k := range f.calls {
		list = append(list, k)
	}
	return list, f.last, false
}

// dataVersion reads PRAGMA data_version of the file now at the path.
func (db *DB) dataVersion(ctx context.Context) (store.Changes, error) {
	f, err := db.Files.Get(ctx)
	if err != nil {
		return store.Changes{}, err
	}
	defer f.Release()
	return f.St.DataVersion(ctx)
}

// Following reports whether the follower runs.
func (db *DB) Following() bool {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.mu.follow.running
}
