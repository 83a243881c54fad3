package upkeep

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// The worker is the database's goroutine for the indexes' long jobs:
// loads, catch-ups and rebuilds, one at a time (so one scan at a time in
// the database: peak memory is the largest rebuild's), every queued load
// first (short, and a filter serves after it), the others in the order
// asked (catch-ups asked again and again never hold a rebuild back). It runs only
// while jobs are queued. The app's Rebuild and Reload are jobs too: they
// wait for theirs, and Suspend interrupts every job the same way.

type kind uint8

const (
	kindLoad kind = iota
	kindCatchUp
	kindRebuild
	kinds
)

var kindNames = [kinds]string{"load", "catch-up", "rebuild"}

// job is one job asked of the worker.
type job struct {
	kind     kind
	k        *Keeper
	why      reason
	app      context.Context // the app's call waiting for it; nil: the background's
	done     chan result     // the app's call's outcome (capacity 1)
	replaced *reason         // an app's job that took a queued background one's place: its reason
}

type result struct {
	err error
	rep *reporter // a rebuild's Progress, for the app's caller to wait for
}

// finish waits for the job's last Progress call and panics with what a
// callback panicked with, as the app's call that asked for it does.
func (r result) finish() error {
	if p := r.rep.wait(); p != nil {
		panic(p)
	}
	return r.err
}

// ask queues a background job of kind for k, once however often it is
// asked before it starts.
func (db *DB) ask(kind kind, k *Keeper, why reason) {
	if k.life.Closing() || db.ReadOnly && kind == kindRebuild {
		return
	}
	db.mu.Lock()
	if j := k.mu.queued[kind]; j != nil {
		j.why = why
		db.mu.Unlock()
		return
	}
	j := &job{kind: kind, k: k, why: why}
	k.mu.queued[kind] = j
	k.mu.pending++
	db.mu.queue = append(db.mu.queue, j)
	db.mu.Unlock()
	db.start()
}

// run queues a job for the app's call and waits for it (ctx bounds the
// wait, and cancels the job when it ends).
func (db *DB) run(ctx context.Context, kind kind, k *Keeper, why reason) result {
	j := &job{kind: kind, k: k, why: why, app: ctx, done: make(chan result, 1)}
	db.mu.Lock()
	switch {
	case db.mu.paused:
		db.mu.Unlock()
		return result{err: store.ErrSuspended}
	case db.ctx.Err() != nil || k.life.Closing():
		db.mu.Unlock()
		return result{err: store.ErrClosed}
	}
	if q := k.mu.queued[kind]; q != nil {
		db.remove(q) // this job does what the queued one would, unless it fails
		j.replaced = &q.why
	} else {
		k.mu.pending++
	}
	db.mu.queue = append(db.mu.queue, j)
	db.mu.Unlock()
	if f := db.Knobs.AppQueued; f != nil {
		f()
	}
	db.start()
	select {
	case r := <-j.done:
		return r
	case <-ctx.Done():
	}
	db.mu.Lock()
	if k.mu.queued[kind] == j || slices.Contains(db.mu.queue, j) {
		db.remove(j)
		db.done(j, result{err: context.Cause(ctx)})
		db.mu.Unlock()
		db.reask(j)
		return <-j.done
	}
	db.mu.Unlock()
	return <-j.done // started: ctx cancels it, and it ends at its next step
}

// reask asks the background again for the job an app's job replaced in
// the queue and did not do (it failed, or never ran).
func (db *DB) reask(j *job) {
	if j.replaced != nil {
		db.ask(j.kind, j.k, *j.replaced)
	}
}

// remove takes a job that has not started out of the queue; db.mu held.
func (db *DB) remove(j *job) {
	for i, q := range db.mu.queue {
		if q == j {
			db.mu.queue = append(db.mu.queue[:i], db.mu.queue[i+1:]...)
			break
		}
	}
	if j.k.mu.queued[j.kind] == j { // an app's job is never registered there
		j.k.mu.queued[j.kind] = nil
	}
}

// start starts the worker if a job is queued and it does not run.
func (db *DB) start() {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.mu.running || len(db.mu.queue) == 0 || db.mu.paused && db.ctx.Err() == nil {
		return
	}
	t, ok := db.life.Enter()
	if !ok {
		return
	}
	db.mu.running = true
	go func() {
		defer db.life.Leave(t)
		for {
			j, ctx := db.next()
			if j == nil {
				return
			}
			db.finish(j, ctx, db.runJob(ctx, j))
		}
	}()
}

// next takes the next job (every queued one fails once the database is
// closing), or ends the goroutine.
func (db *DB) next() (*job, context.Context) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.ctx.Err() != nil {
		for _, j := range db.mu.queue {
			j.k.mu.queued[j.kind] = nil
			db.done(j, result{err: store.ErrClosed})
		}
		db.mu.queue = nil
	}
	if len(db.mu.queue) == 0 || db.mu.paused {
		db.mu.running = false
		if db.mu.stopped != nil {
			close(db.mu.stopped)
			db.mu.stopped = nil
		}
		return nil, nil
	}
	best := 0 // the oldest job, but a load first
	for i, j := range db.mu.queue {
		if j.kind == kindLoad {
			best = i
			break
		}
	}
	j := db.mu.queue[best]
	db.remove(j)
	j.k.mu.running = j
	if j.kind == kindRebuild && j.k.mu.deferred[kindRebuild] != nil { // this rebuild repairs what it waited for
		if j.app != nil && j.replaced == nil { // asked again if the app's fails
			j.replaced = j.k.mu.deferred[kindRebuild]
		}
		j.k.mu.deferred[kindRebuild] = nil
		db.done(&job{k: j.k}, result{})
	}
	ctx, cancel := context.WithCancelCause(j.k.ctx)
	db.mu.current = cancel
	if j.app != nil {
		stop := context.AfterFunc(j.app, func() { cancel(context.Cause(j.app)) })
		db.mu.current = func(cause error) { stop(); cancel(cause) }
	}
	return j, ctx
}

// runJob runs one job, unless its index is closing.
func (db *DB) runJob(ctx context.Context, j *job) (r result) {
	k := j.k
	t, ok := k.life.Enter()
	if !ok {
		return result{err: store.ErrClosed}
	}
	defer k.life.Leave(t)
	defer func() {
		if r.err != nil && k.ctx.Err() != nil && !errors.Is(r.err, store.ErrClosed) { // the index or the database closed under it
			r.err = fmt.Errorf("%s: %w (%w)", kindNames[j.kind], store.ErrClosed, r.err)
		}
	}()
	switch j.kind {
	case kindLoad:
		r.err = k.loadJob(ctx, j.app != nil)
	case kindCatchUp:
		r.err = k.G.CatchUp(ctx)
	case kindRebuild:
		r.rep, r.err = k.rebuildJob(ctx, j.why)
	}
	return r
}

// finish ends a job: one Suspend interrupted is queued again (the app's
// call is told ErrSuspended, and a rebuild that left no filter serving is
// asked of the background); otherwise its outcome goes to its caller.
func (db *DB) finish(j *job, ctx context.Context, r result) {
	db.mu.Lock()
	db.mu.current(nil)
	db.mu.current = nil
	j.k.mu.running = nil
	if r.err != nil && interrupted(ctx) && j.k.ctx.Err() == nil && db.ctx.Err() == nil {
		if j.app == nil {
			if q := j.k.mu.queued[j.kind]; q != nil { // asked again meanwhile: that one does it
				db.done(j, result{err: r.err})
			} else {
				db.mu.queue = append([]*job{j}, db.mu.queue...)
				j.k.mu.queued[j.kind] = j
			}
			db.mu.Unlock()
			return
		}
		db.done(j, result{err: fmt.Errorf("%s: %w", kindNames[j.kind], store.ErrSuspended)})
		db.mu.Unlock()
		if j.kind == kindRebuild && j.k.G.Serving() == nil {
			db.ask(kindRebuild, j.k, reason{text: "asked by the app, interrupted by Suspend"})
		}
		db.reask(j)
		return
	}
	db.done(j, r)
	db.mu.Unlock()
	if j.app == nil && j.kind == kindRebuild {
		j.k.rebuildFailed(ctx, r.err)
	}
	if r.err != nil {
		db.reask(j)
	}
}

// done hands a job's outcome to its caller and counts it done; db.mu held.
func (db *DB) done(j *job, r result) {
	if j.done != nil {
		j.done <- r
	}
	k := j.k
	if k.mu.pending--; k.mu.pending == 0 && k.mu.idle != nil {
		close(k.mu.idle)
		k.mu.idle = nil
	}
}
