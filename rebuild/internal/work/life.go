package work

import (
	"context"
	"sync"
)

// Life counts the work in progress on an index or a database (public
// calls and background jobs) so that Close can wait for it, and knows
// which of it is parked in a callback of the app: a callback may call
// Close, and Close must not wait for the work that is running the
// callback. Close waits until nothing but parked work remains (its ctx
// bounds the wait); the last piece of work to leave after that finishes
// the closing (final) without the caller. final runs on a goroutine of its
// own, since it may write and wait for the app's locks: Close's ctx bounds
// the wait for it too, and work that leaves last never runs it itself.
//
// Calls (EnterCall: the app's questions, which it may ask back to back
// from many goroutines) are counted by the era they entered in: Idle
// begins a new era and waits only for the calls of earlier ones, so that
// calls that keep coming cannot keep it waiting.
type Life struct {
	mu      sync.Mutex     // guards everything below
	n       int            // work in progress, calls included
	parked  int            // ... of which inside a callback (never a call)
	era     uint64         // the era calls enter in; each Idle begins a new one
	calls   map[uint64]int // calls in progress by era (eras with none deleted)
	ncalls  int            // their sum
	closing bool
	waiting bool          // Close is waiting: it starts final itself
	changed chan struct{} // closed when n or parked changes while Close or Idle waits
	final   func()        // what remains of Close, run once
	ran     bool
}

// Enter registers work; false once closing began.
func (l *Life) Enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return false
	}
	l.n++
	return true
}

// Call is a call registered by EnterCall.
type Call struct{ era uint64 }

// EnterCall registers a call; false once closing began.
func (l *Life) EnterCall() (Call, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return Call{}, false
	}
	if l.calls == nil {
		l.calls = map[uint64]int{}
	}
	l.n++
	l.calls[l.era]++
	l.ncalls++
	return Call{l.era}, true
}

// LeaveCall ends a call registered by EnterCall.
func (l *Life) LeaveCall(c Call) {
	l.mu.Lock()
	if l.calls[c.era]--; l.calls[c.era] == 0 {
		delete(l.calls, c.era)
	}
	l.ncalls--
	l.leaveLocked()
}

// Leave ends work registered by Enter; the last one out after Close gave
// up waiting starts final.
func (l *Life) Leave() {
	l.mu.Lock()
	l.leaveLocked()
}

// leaveLocked ends a piece of work and unlocks mu.
func (l *Life) leaveLocked() {
	l.n--
	run := l.finishing()
	l.signal()
	l.mu.Unlock()
	if run {
		go l.final()
	}
}

// Park marks the caller's work as inside a callback (+1) or back (-1).
func (l *Life) Park(d int) {
	l.mu.Lock()
	l.parked += d
	l.signal()
	l.mu.Unlock()
}

// Closing reports whether closing began.
func (l *Life) Closing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closing
}

// Idle waits until no work is in progress but parked work and the calls
// that entered after Idle began, or ctx ends (its error). Work may enter
// again afterwards.
func (l *Life) Idle(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	upTo := l.era
	l.era++
	return l.settle(ctx, func() bool {
		if l.n-l.ncalls > l.parked {
			return true
		}
		for era := range l.calls {
			if era <= upTo {
				return true
			}
		}
		return false
	})
}

// settle waits until busy reports false (by default: no work in progress
// but parked work), or ctx ends (its error). Callers hold mu; settle
// releases it while it waits.
func (l *Life) settle(ctx context.Context, busy func() bool) error {
	if busy == nil {
		busy = func() bool { return l.n > l.parked }
	}
	for busy() {
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			l.mu.Lock()
			return context.Cause(ctx)
		}
		l.mu.Lock()
	}
	return nil
}

// Close begins closing (only the first call; later ones return nil at
// once) and waits until no work is in progress but parked work, or ctx
// ends. final runs once no work at all remains: started here, and waited
// for until ctx ends, or, if Close stopped waiting with work parked or in
// progress, started by the last Leave. The error is ctx's, if it ended
// first.
func (l *Life) Close(ctx context.Context, final func()) error {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return nil
	}
	l.closing, l.final, l.waiting = true, final, true
	err := l.settle(ctx, nil)
	l.waiting = false
	run := l.finishing() // the work may have ended while ctx did
	l.mu.Unlock()
	if run {
		return runFinal(ctx, final)
	}
	return err
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
func (l *Life) finishing() bool {
	if !l.closing || l.waiting || l.n > 0 || l.ran || l.final == nil {
		return false
	}
	l.ran = true
	return true
}

// signal wakes Close and Idle. Callers hold mu.
func (l *Life) signal() {
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}
