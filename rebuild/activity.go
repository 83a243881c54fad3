package rebuild

import (
	"context"
	"sync"
)

// activity counts the work in progress on an index or a database (public
// calls and background jobs) so that Close can wait for it, and knows
// which of it is parked in a callback of the app (Source.Progress): a
// callback may call Close, and Close must not wait for the work that is
// running the callback. Close waits until nothing but parked work remains
// (its ctx bounds the wait); the last piece of work to leave after that
// finishes the closing (final) without the caller. final runs on a
// goroutine of its own, since it writes (the snapshot, the hold) and may
// wait for the app's locks: Close's ctx bounds the wait for it too, and a
// query that leaves last never runs it.
type activity struct {
	mu      sync.Mutex // guards everything below
	n       int        // work in progress
	parked  int        // ... of which inside a callback
	closing bool
	waiting bool          // Close is waiting: it runs final itself
	changed chan struct{} // closed when n or parked changes during closing
	final   func()        // what remains of Close, run once
	ran     bool
}

// enter registers work; false once closing began.
func (a *activity) enter() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closing {
		return false
	}
	a.n++
	return true
}

// leave ends work registered by enter; the last one out after Close gave
// up waiting runs final.
func (a *activity) leave() {
	a.mu.Lock()
	a.n--
	run := a.finishing()
	a.signal()
	a.mu.Unlock()
	if run {
		go a.final()
	}
}

// park marks the caller's work as inside a callback (+1) or back (-1).
func (a *activity) park(d int) {
	a.mu.Lock()
	a.parked += d
	a.signal()
	a.mu.Unlock()
}

// closed reports whether closing began.
func (a *activity) closed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closing
}

// close begins closing (only the first call; later ones return
// immediately) and waits until no work is in progress but parked work, or
// ctx ends. final runs once no work at all remains: started here, and
// waited for until ctx ends, or, if close stopped waiting with work parked
// or in progress, started by the last leave.
func (a *activity) close(ctx context.Context, final func()) error {
	a.mu.Lock()
	if a.closing {
		a.mu.Unlock()
		return nil
	}
	a.closing, a.final, a.waiting = true, final, true
	for a.n > a.parked {
		if a.changed == nil {
			a.changed = make(chan struct{})
		}
		ch := a.changed
		a.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			a.mu.Lock()
			a.waiting = false
			run := a.finishing() // the work may have ended meanwhile
			a.mu.Unlock()
			if run {
				return runFinal(ctx, final)
			}
			return context.Cause(ctx)
		}
		a.mu.Lock()
	}
	a.waiting = false
	run := a.finishing()
	a.mu.Unlock()
	if run {
		return runFinal(ctx, final)
	}
	return nil
}

// runFinal runs final on a goroutine of its own and waits for it until
// ctx ends; then final finishes without the caller.
func runFinal(ctx context.Context, final func()) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		final()
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// finishing reports whether final is to run now, and marks it run.
// Callers hold mu.
func (a *activity) finishing() bool {
	if !a.closing || a.waiting || a.n > 0 || a.ran || a.final == nil {
		return false
	}
	a.ran = true
	return true
}

// signal wakes Close. Callers hold mu.
func (a *activity) signal() {
	if a.changed != nil {
		close(a.changed)
		a.changed = nil
	}
}
