package upkeep

import (
	"errors"
	"sync"
)

// reporter delivers a rebuild's Progress calls asynchronously, on a
// goroutine of its own, the latest value each time (a slow callback skips
// values, never the last): the job never waits for the app's callback, so
// no call the callback makes can wait for it. The app's call that asked
// for the rebuild (Rebuild, the cron job) waits for the last delivery
// once the job has ended, holding nothing, and panics with what a
// callback panicked with; a callback that panics during the scan stops
// it. Its fields are guarded by the database's DB.mu.
type reporter struct {
	fn      func(done, total int64)
	closing func() bool // the index is closing: no more calls
	cancel  func(error) // stops the scan (set before the first update)
	k       *Keeper

	next     *[2]int64 // the value not delivered yet
	running  bool      // the goroutine runs
	panicked any
	runs     sync.WaitGroup // the goroutine, for wait
}

func (k *Keeper) newReporter() *reporter {
	return &reporter{fn: k.cfg.Progress, closing: k.life.Closing, k: k}
}

// update hands the callback a value.
func (r *reporter) update(done, total int64) {
	if r.fn == nil {
		return
	}
	r.k.db.mu.Lock()
	defer r.k.db.mu.Unlock()
	if r.panicked != nil {
		return
	}
	r.next = &[2]int64{done, total}
	if !r.running {
		r.running = true
		r.runs.Add(1)
		go r.run()
	}
}

func (r *reporter) run() {
	defer r.runs.Done()
	for {
		r.k.db.mu.Lock()
		v := r.next
		r.next = nil
		if v == nil || r.panicked != nil {
			r.running = false
			r.k.db.mu.Unlock()
			return
		}
		r.k.db.mu.Unlock()
		if !r.closing() {
			r.call(v[0], v[1])
		}
	}
}

func (r *reporter) call(done, total int64) {
	defer func() {
		if p := recover(); p != nil {
			r.k.db.mu.Lock()
			r.panicked = p
			r.k.db.mu.Unlock()
			r.k.info("a Progress callback panicked", "panic", p)
			if r.cancel != nil {
				r.cancel(errProgressPanicked)
			}
		}
	}()
	r.fn(done, total)
}

// wait waits for the last value's delivery (the scan has ended: no value
// comes after) and returns what a callback panicked with, or nil.
func (r *reporter) wait() any {
	if r == nil {
		return nil
	}
	r.runs.Wait()
	return r.panic()
}

// panic returns what a callback panicked with so far, or nil.
func (r *reporter) panic() any {
	if r == nil {
		return nil
	}
	r.k.db.mu.Lock()
	defer r.k.db.mu.Unlock()
	return r.panicked
}

var errProgressPanicked = errors.New("a Progress callback panicked")
