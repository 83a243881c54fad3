package work

import "sync"

// Pending counts the runs of one kind of job asked of a background
// goroutine and not finished, for a caller that waits until there are
// none. Asking again while a run is queued and not started adds nothing:
// one run serves every ask made before it started.
type Pending struct {
	mu     sync.Mutex    // guards the fields below
	n      int           // asked and not finished
	queued bool          // one is asked and has not started
	idle   chan struct{} // closed when n drops to 0
}

// Ask records that a run is wanted; true if it must be queued (none was
// queued and not started).
func (p *Pending) Ask() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.queued {
		return false
	}
	p.queued = true
	p.n++
	return true
}

// Start marks the queued run as started: an Ask after it queues another.
func (p *Pending) Start() {
	p.mu.Lock()
	p.queued = false
	p.mu.Unlock()
}

// Done marks a started run as finished.
func (p *Pending) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n > 0 {
		p.n--
	}
	if p.n == 0 && p.idle != nil {
		close(p.idle)
		p.idle = nil
	}
}

// Wait returns a channel closed once no run is pending (nil if none is).
func (p *Pending) Wait() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		return nil
	}
	if p.idle == nil {
		p.idle = make(chan struct{})
	}
	return p.idle
}

// Busy reports whether a run is pending.
func (p *Pending) Busy() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n > 0
}

// Release ends every wait: nothing pending will run (Close).
func (p *Pending) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n, p.queued = 0, false
	if p.idle != nil {
		close(p.idle)
		p.idle = nil
	}
}
