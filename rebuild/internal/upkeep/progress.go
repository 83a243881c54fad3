package upkeep

import (
	"sync"
	"sync/atomic"
)

// reporter delivers a rebuild's Progress calls asynchronously, on a
// goroutine of its own, the latest value each time (a slow callback skips
// values, never the last): the job never waits for the app's callback,
// so no call the callback makes can wait for it. The app's call that
// asked for the rebuild (Rebuild, the cron job) waits for the last
// delivery once the job has ended, holding nothing, and panics with what
// a callback panicked with; a callback that panics during the scan stops
// it.
type reporter struct {
	fn      func(done, total int64)
	closing func() bool // the index is closing: no more calls
	cancel  func(error) // stops the scan (set before the first update)
	log     func(p any) // a panic, noted

	next     atomic.Pointer[[2]int64] // the value not delivered yet
	running  atomic.Bool              // the goroutine runs
	panicked atomic.Pointer[any]
	runs     sync.WaitGroup // the goroutine, for wait
}

func (k *Keeper) newReporter() *reporter {
	return &reporter{fn: k.cfg.Progress, closing: k.life.Closing, log: func(p any) { k.info("a Progress callback panicked", "panic", p) }}
}

// update hands the callback a value.
func (r *reporter) update(done, total int64) {
	if r.fn == nil || r.panicked.Load() != nil {
		return
	}
	r.next.Store(&[2]int64{done, total})
	if r.running.CompareAndSwap(false, true) {
		r.runs.Add(1)
		go r.run()
	}
}

func (r *reporter) run() {
	defer r.runs.Done()
	for {
		v := r.next.Swap(nil)
		if v == nil {
			r.running.Store(false)
			// A value stored after the Swap and before the Store found
			// the goroutine running: deliver it.
			if r.next.Load() == nil || !r.running.CompareAndSwap(false, true) {
				return
			}
			continue
		}
		if !r.closing() && r.panicked.Load() == nil {
			r.call(v[0], v[1])
		}
	}
}

func (r *reporter) call(done, total int64) {
	defer func() {
		if p := recover(); p != nil {
			r.panicked.Store(&p)
			r.log(p)
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
	if p := r.panicked.Load(); p != nil {
		return *p
	}
	return nil
}

var errProgressPanicked = errorString("a Progress callback panicked")

type errorString string

func (e errorString) Error() string { return string(e) }
