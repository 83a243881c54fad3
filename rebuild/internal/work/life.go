package work

import (
	"context"
	"sync"
)

// Life counts the work in progress on an index or a database (the app's
// calls and the background's jobs) so that Close can wait for it: Close
// waits until none remains (its ctx bounds the wait), and the last piece
// of work to leave after Close stopped waiting runs what remains of the
// closing (final), once. Work is counted by the era it entered in: Idle
// (Suspend) begins a new era and waits only for the work of earlier ones,
// so that calls that keep coming cannot keep it waiting.
type Life struct {
	mu      sync.Mutex     // guards everything below
	n       map[uint64]int // work in progress by era (eras with none deleted)
	total   int
	era     uint64
	closing bool
	waiting bool          // Close is waiting: it starts final itself
	changed chan struct{} // closed when a count changes while Close or Idle waits
	final   func()
	ran     bool
}

// Token is work registered by Enter.
type Token struct{ era uint64 }

// Enter registers work; false once closing began.
func (l *Life) Enter() (Token, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return Token{}, false
	}
	if l.n == nil {
		l.n = map[uint64]int{}
	}
	l.n[l.era]++
	l.total++
	return Token{l.era}, true
}

// Leave ends work registered by Enter; the last one out after Close
// stopped waiting starts final.
func (l *Life) Leave(t Token) {
	l.mu.Lock()
	if l.n[t.era]--; l.n[t.era] == 0 {
		delete(l.n, t.era)
	}
	l.total--
	run := l.finishing()
	l.signal()
	l.mu.Unlock()
	if run {
		start(l.final)
	}
}

// Closing reports whether closing began.
func (l *Life) Closing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closing
}

// Idle waits until the work that entered before it began has left, or
// ctx ends (its error).
func (l *Life) Idle(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	upTo := l.era
	l.era++
	return l.settle(ctx, func() bool {
		for era := range l.n {
			if era <= upTo {
				return true
			}
		}
		return false
	})
}

// settle waits until busy reports false or ctx ends; callers hold mu,
// which it releases while it waits.
func (l *Life) settle(ctx context.Context, busy func() bool) error {
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

// Close begins closing (only the first call; later ones return nil) and
// waits until no work is in progress, or ctx ends (its error). final runs
// once no work remains: started and waited for here (until ctx ends), or
// by the last Leave if Close stopped waiting first.
func (l *Life) Close(ctx context.Context, final func()) error {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return nil
	}
	l.closing, l.final, l.waiting = true, final, true
	err := l.settle(ctx, func() bool { return l.total > 0 })
	l.waiting = false
	run := l.finishing()
	l.mu.Unlock()
	if !run {
		return err
	}
	done := start(final)
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// start runs final on a goroutine of its own (it may write, and wait for
// the app's locks): done closes when it returns.
func start(final func()) (done chan struct{}) {
	done = make(chan struct{})
	go func() {
		defer close(done)
		final()
	}()
	return done
}

// finishing reports whether final is to run now, and marks it run.
func (l *Life) finishing() bool {
	if !l.closing || l.waiting || l.total > 0 || l.ran || l.final == nil {
		return false
	}
	l.ran = true
	return true
}

func (l *Life) signal() {
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}
