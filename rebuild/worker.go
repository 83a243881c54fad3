package rebuild

import (
	"context"
	"errors"
	"sync"
)

// A job's kind, in the order the worker runs them: every queued load
// before any refill, every refill before any rebuild.
const (
	jobLoad    = iota // the opening load of a snapshot (Index.load)
	jobRefill         // a filter read again after a restore in place (catchup.go, refill)
	jobRebuild        // a rebuild the index asked for (rebuilder.go, background)
	jobKinds
)

// worker is the database's goroutine for the indexes' long jobs: loads,
// refills and rebuilds (a read-only database only loads), one at a time, in
// the order of their kinds and, within a kind, asked. It runs only while
// jobs are queued: started by the first ask, it ends when the queues are
// empty, so an idle database runs nothing. Suspend pauses it: the job in
// progress is interrupted and queued again, and nothing starts until
// Resume. Close cancels the job in progress.
type worker struct {
	db *DB
	mu struct {
		sync.Mutex // guards the fields below
		queues     [jobKinds][]*Index
		running    bool                    // the goroutine runs
		current    context.CancelCauseFunc // interrupts the job in progress
		paused     bool
		stopped    chan struct{} // closed when the goroutine ends while paused
	}
}

func newWorker(db *DB) *worker { return &worker{db: db} }

// ask queues a job of kind for ix, once however often it is asked before
// it starts (ix.up.jobs counts it for Wait).
func (w *worker) ask(kind int, ix *Index) {
	if !ix.up.jobs[kind].Ask() {
		return
	}
	w.mu.Lock()
	w.mu.queues[kind] = append(w.mu.queues[kind], ix)
	w.mu.Unlock()
	w.wake()
}

// askAfterCall asks for a job of kind for ix that starts once the app
// calls the index (after the call's answer: a call, Wait, Rebuild) and
// not before: the opening load waits for the first call to be answered,
// so that the app's first answer, from SQLite, does not share the machine
// with it, and the load runs in the time the app then waits on the
// network. Until then the job counts as asked (Stats.Upkeep).
func (w *worker) askAfterCall(kind int, ix *Index) {
	if !ix.up.jobs[kind].Ask() {
		return
	}
	ix.up.deferred.Store(int32(kind) + 1)
}

// called starts ix's job asked with askAfterCall, if one waits.
func (w *worker) called(ix *Index) {
	ix.retryDue()
	if ix.up.deferred.Load() == 0 {
		return
	}
	kind := int(ix.up.deferred.Swap(0)) - 1
	if kind < 0 {
		return
	}
	w.mu.Lock()
	w.mu.queues[kind] = append(w.mu.queues[kind], ix)
	w.mu.Unlock()
	w.wake()
}

// wake starts the goroutine if a job is queued and it is not running.
func (w *worker) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mu.running || w.mu.paused || !w.queuedLocked() || w.db.life.ctx.Err() != nil {
		return
	}
	if !w.db.life.Enter() {
		return
	}
	w.mu.running = true
	go w.run()
}

func (w *worker) queuedLocked() bool {
	for _, q := range w.mu.queues {
		if len(q) > 0 {
			return true
		}
	}
	return false
}

// next takes the next job, or reports none (the goroutine then ends).
func (w *worker) next() (kind int, ix *Index, ctx context.Context, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.mu.paused && w.db.life.ctx.Err() == nil {
		for k := range w.mu.queues {
			if q := w.mu.queues[k]; len(q) > 0 {
				ix, w.mu.queues[k] = q[0], q[1:]
				ctx, w.mu.current = context.WithCancelCause(ix.life.ctx)
				return k, ix, ctx, true
			}
		}
	}
	w.mu.running = false
	if w.mu.stopped != nil {
		close(w.mu.stopped)
		w.mu.stopped = nil
	}
	return 0, nil, nil, false
}

// run is the worker's goroutine; db.life counts it.
func (w *worker) run() {
	defer w.db.life.Leave()
	for {
		kind, ix, ctx, ok := w.next()
		if !ok {
			return
		}
		ix.up.jobs[kind].Start()
		after := w.runJob(ctx, kind, ix)
		w.mu.Lock()
		w.mu.current(nil)
		w.mu.current = nil
		// Interrupted by Suspend: queued again, to run after Resume (or
		// at once, if Resume came before the job stopped).
		requeue := interrupted(ctx) && ix.life.ctx.Err() == nil
		if requeue {
			ix.up.jobs[kind].Ask()
			w.mu.queues[kind] = append([]*Index{ix}, w.mu.queues[kind]...)
		}
		w.mu.Unlock()
		ix.up.jobs[kind].Done()
		if after != nil {
			w.finish(after)
		}
	}
}

// finish runs what remains of a job once it counts as done (a rebuild's
// wait for its last Progress call) on a goroutine of its own, counted in
// the database's life, so that the worker goes on to the next job: a
// callback of the app may wait for any of them (another collection's
// Wait, Suspend). Once closing began it runs here (the worker is ending).
func (w *worker) finish(after func()) {
	if !w.db.life.Enter() {
		after()
		return
	}
	go func() {
		defer w.db.life.Leave()
		after()
	}()
}

// runJob runs one job of ix, unless ix is closing; after, if not nil,
// runs once the job counts as done.
func (w *worker) runJob(ctx context.Context, kind int, ix *Index) func() {
	if !ix.life.Enter() {
		return nil
	}
	var rest func()
	switch kind {
	case jobLoad:
		ix.loadNow(ctx)
	case jobRefill:
		ix.refillNow(ctx)
	case jobRebuild:
		rest = ix.rebuildNow(ctx)
	}
	if rest == nil {
		ix.life.Leave()
		return nil
	}
	return func() {
		defer ix.life.Leave()
		rest()
	}
}

// errSuspended is the cause of a job's context that Suspend cancelled.
var errSuspended = errors.New("suspended")

// interrupted reports whether the job whose context is ctx was
// interrupted by Suspend (its work is done again after Resume).
func interrupted(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errSuspended)
}

// pause stops the goroutine: the job in progress is interrupted (and
// queued again), nothing starts until resume (wake). It waits for the
// goroutine to end until ctx ends, and reports whether it did.
func (w *worker) pause(ctx context.Context) bool {
	w.mu.Lock()
	w.mu.paused = true
	if !w.mu.running {
		w.mu.Unlock()
		return true
	}
	if w.mu.current != nil {
		w.mu.current(errSuspended)
	}
	if w.mu.stopped == nil {
		w.mu.stopped = make(chan struct{})
	}
	stopped := w.mu.stopped
	w.mu.Unlock()
	select {
	case <-stopped:
		return true
	case <-ctx.Done():
		return false
	}
}

// resume lets the worker run again.
func (w *worker) resume() {
	w.mu.Lock()
	w.mu.paused = false
	w.mu.Unlock()
	w.wake()
}
