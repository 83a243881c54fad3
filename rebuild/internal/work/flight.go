package work

import (
	"context"
	"sync"
)

// Flight lets many goroutines share one piece of work that any of them
// may lead: the first caller runs it, the others wait for that run (their
// context bounds the wait) and take its outcome. No lock is held while the
// work runs.
type Flight struct {
	mu  sync.Mutex // guards cur; held only to read or replace it
	cur *run       // the run in progress, or nil
}

type run struct {
	done      chan struct{} // closed when the run ends
	err       error         // set before done is closed
	abandoned bool          // the leader's ctx had ended when the run failed: set before done is closed
}

// Do returns nil once done reports true. While it does not, the caller
// either waits for the run in progress and takes its error (a failed run
// fails its waiters too, so that N waiters on a busy database do not
// retry one after another), or, if none is running, runs work itself
// with ctx. A run that failed after its leader's ctx ended was abandoned,
// not refused: a waiter whose own ctx is alive leads the work again
// rather than fail with another goroutine's cancellation. work must make
// done true when it returns nil. Before it waits for another caller's
// run, Do calls yield, which lets go of what that run may need (the
// caller's reading connection: the leader may be waiting for one).
func (f *Flight) Do(ctx context.Context, done func() bool, yield func(), work func() error) error {
	for !done() {
		f.mu.Lock()
		if r := f.cur; r != nil {
			f.mu.Unlock()
			if yield != nil {
				yield()
			}
			select {
			case <-r.done:
				if r.err != nil && !(r.abandoned && ctx.Err() == nil) {
					return r.err
				}
				continue
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		r := &run{done: make(chan struct{})}
		f.cur = r
		f.mu.Unlock()
		if err := f.lead(ctx, r, work); err != nil {
			return err
		}
	}
	return nil
}

// lead runs work as r, on behalf of a caller whose context is ctx; r
// ends even if work panics.
func (f *Flight) lead(ctx context.Context, r *run, work func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			r.err = &PanicError{Value: p}
			f.end(r)
			panic(p)
		}
		r.err = err
		r.abandoned = err != nil && ctx.Err() != nil
		f.end(r)
	}()
	return work()
}

func (f *Flight) end(r *run) {
	f.mu.Lock()
	f.cur = nil
	f.mu.Unlock()
	close(r.done)
}

// PanicError is the outcome a run that panicked hands its waiters (the
// leader's goroutine panics on).
type PanicError struct{ Value any }

func (e *PanicError) Error() string { return "the goroutine leading the work panicked" }
