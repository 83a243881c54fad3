package rebuild

import "sync"

// reporter delivers a rebuild's Progress calls from a goroutine of its
// own, the latest value each time (a slow callback skips values, never the
// last), so that the scan never waits for the app's callback: a callback
// may then call anything, another collection's Rebuild, its own index's
// Wait or Close included, without waiting for a turn its own rebuild
// holds. A callback that panics stops the scan (cancel); the value is
// returned by wait, for the rebuild's caller to panic with.
type reporter struct {
	fn      func(done, total int64)
	closing func() bool // the index is closing: no more calls
	cancel  func()      // stops the scan; set by the scan

	mu       sync.Mutex // guards the fields below
	next     *[2]int64  // the value not delivered yet
	running  bool       // the goroutine runs
	finished bool       // no more values come
	panicked any
	idle     chan struct{} // closed when the goroutine ends with nothing left to deliver, after finish
}

// newReporter returns a reporter of Source.Progress (a no-op without one).
func (ix *Index) newReporter() *reporter {
	return &reporter{fn: ix.cfg.Progress, closing: ix.life.Closing, idle: make(chan struct{})}
}

// update hands the callback a value.
func (r *reporter) update(done, total int64) {
	if r.fn == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished || r.panicked != nil {
		return
	}
	r.next = &[2]int64{done, total}
	if !r.running {
		r.running = true
		go r.run()
	}
}

func (r *reporter) run() {
	for {
		r.mu.Lock()
		v := r.next
		r.next = nil
		if v == nil || r.panicked != nil {
			r.running = false
			if r.finished {
				close(r.idle)
			}
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		if !r.closing() {
			r.call(v[0], v[1])
		}
	}
}

// call runs the callback once, recovering a panic.
func (r *reporter) call(done, total int64) {
	defer func() {
		if p := recover(); p != nil {
			r.mu.Lock()
			r.panicked = p
			r.mu.Unlock()
			if r.cancel != nil {
				r.cancel()
			}
		}
	}()
	r.fn(done, total)
}

// finish says no more values come.
func (r *reporter) finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return
	}
	r.finished = true
	if !r.running {
		close(r.idle)
	}
}

// wait waits until the last value was delivered, after finish, and
// returns what a callback panicked with (nil if none did).
func (r *reporter) wait() any {
	<-r.idle
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.panicked
}
