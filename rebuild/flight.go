package rebuild

import (
	"context"
	"sync"
)

// flight lets many goroutines share one piece of work that any of them may
// lead, such as catching a filter up on the log: the first caller runs it,
// the others wait for that run (their ctx bounds the wait) and check again.
// No lock is held while the work runs, so nothing a query, a callback or
// Close waits for is held across SQL.
type flight struct {
	mu  sync.Mutex    // guards cur; held only to read or replace it
	cur chan struct{} // closed when the run in progress ends; nil if none
}

// do returns nil once done reports true. While it does not, the caller
// either waits for the run in progress or, if none is, runs work itself.
// A run's error goes to its leader only; the callers that waited check
// done again and lead a run of their own if needed. work must make done
// true for the leader when it returns nil. Before it waits for another
// caller's run, do calls yield, which lets go of what that run may need:
// the caller's reading connection (the leader may be waiting for one).
func (fl *flight) do(ctx context.Context, done func() bool, yield func(), work func() error) error {
	for !done() {
		fl.mu.Lock()
		if run := fl.cur; run != nil {
			fl.mu.Unlock()
			yield()
			select {
			case <-run:
				continue
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		run := make(chan struct{})
		fl.cur = run
		fl.mu.Unlock()
		if err := fl.lead(run, work); err != nil {
			return err
		}
	}
	return nil
}

func (fl *flight) lead(run chan struct{}, work func() error) error {
	defer func() {
		fl.mu.Lock()
		fl.cur = nil
		fl.mu.Unlock()
		close(run)
	}()
	return work()
}
