package rebuild

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/rebuild/internal/work"
)

// upkeep is an index's background work: the jobs asked of the database's
// worker and not finished, why the next rebuild was asked for, the source
// this index's open attached first (undone if its first scan fails), and
// the flight in which one goroutine (a call or the follower) catches the
// filter and the spellings up on the log for all.
type upkeep struct {
	jobs    [jobKinds]work.Pending       // by kind (worker.go); Wait waits for all
	app     work.Pending                 // the app's Rebuild calls in progress; Wait waits for them too
	why     atomic.Pointer[reason]       // why the queued rebuild is asked for
	created atomic.Pointer[store.Source] // attached by this index's open, not yet scanned
	catchUp work.Flight                  // catching up on the log (catchup.go)
	// deferred is the kind of a job asked to start after the next call
	// (worker.askAfterCall), plus one; 0: none.
	deferred atomic.Int32
	// retry is when a background rebuild that failed (no filter serving)
	// is tried again, at the first call after it (unix nanoseconds; 0:
	// none), and the wait before the one after that, doubled at each
	// failure: a busy database (the app writing without pause) or a
	// passing error does not leave the index answering from SQLite for
	// good, and an idle app runs nothing.
	retryAt, retryWait atomic.Int64
	// undone is the source whose first attach, made by this index, was
	// undone after its scan failed (not the app's Detach): the source is
	// attached again by the next retry, not answered from SQLite for
	// good. Forgotten once the source is seen attached under another
	// dataset id (attached again, by this index or another process).
	undone atomic.Pointer[store.Source]
}

// Bounds of the wait before a failed background rebuild is tried again.
const (
	retryFirst = time.Second
	retryLast  = 5 * time.Minute
)

// rebuildFailed notes how a background rebuild ended: a failure that
// leaves no filter serving, and that another try may mend, schedules a
// retry; anything else ends the schedule.
func (ix *Index) rebuildFailed(ctx context.Context, err error) {
	if err == nil || ix.filter() != nil {
		ix.up.retryAt.Store(0)
		ix.up.retryWait.Store(0)
		return
	}
	if interrupted(ctx) || ix.life.ctx.Err() != nil || refusal(err) {
		return // Resume runs it again; Close ends it; a refusal is the app's to mend
	}
	first := retryFirst
	if k := ix.db.cfg.knobs.retryFirst; k > 0 {
		first = k
	}
	w := min(retryLast, max(first, 2*time.Duration(ix.up.retryWait.Load())))
	ix.up.retryWait.Store(int64(w))
	ix.up.retryAt.Store(time.Now().Add(w).UnixNano())
}

// refusal reports whether err says the source cannot be served as it is
// (the app's schema, configuration or file must change first).
func refusal(err error) bool {
	for _, r := range []error{ErrInexactColumn, ErrNotIndexed, ErrNoSource, ErrBadName, ErrReadOnly, ErrClosed, ErrNotUTF8, ErrHardLinked} {
		if errors.Is(err, r) {
			return true
		}
	}
	return false
}

// retryDue asks for the rebuild a failure scheduled, once its time came
// (a call's, through worker.called).
func (ix *Index) retryDue() {
	at := ix.up.retryAt.Load()
	if at == 0 || time.Now().UnixNano() < at || !ix.up.retryAt.CompareAndSwap(at, 0) {
		return
	}
	ix.askRebuild(reason{text: "retry after a failed rebuild"})
}

// reason is why a rebuild runs: text for Stats, auto for an automatic
// rebuild of a filter that filled up (sized for growth, spaced by cost).
type reason struct {
	text string
	auto bool
}

// busy returns a channel closed when no job is pending (nil: none is).
func (u *upkeep) busy() <-chan struct{} {
	for k := range u.jobs {
		if ch := u.jobs[k].Wait(); ch != nil {
			return ch
		}
	}
	return u.app.Wait()
}

// release ends every wait for the index's jobs (Close).
func (u *upkeep) release() {
	for k := range u.jobs {
		u.jobs[k].Release()
	}
	u.app.Release()
}

// askRebuild asks the worker for a rebuild (the caller checked that the
// index may rebuild by itself, or it is the first scan).
func (ix *Index) askRebuild(r reason) {
	if ix.db.cfg.ReadOnly || ix.life.Closing() {
		return
	}
	ix.up.why.Store(&r)
	ix.db.work.ask(jobRebuild, ix)
}

// askRepair asks for a rebuild because no filter can serve (a snapshot
// refused, a filter dropped, the triggers put back), unless the app
// rebuilds by itself (AutoRebuild.Off).
func (ix *Index) askRepair(why string) {
	if !ix.cfg.AutoRebuild.Off {
		ix.askRebuild(reason{text: why})
	}
}

// loadNow is the worker's load job: the snapshot, if the database vouches
// for it, caught up on every key logged after it; otherwise the reason is
// noted and a rebuild asked for.
func (ix *Index) loadNow(ctx context.Context) {
	ix.sweepTemp()
	err := ix.load(ctx)
	switch {
	case err == nil:
	case ctx.Err() != nil: // interrupted (Suspend, Close): done again later
	default:
		ix.m.setSnapshotError(err)
		ix.askRepair("the snapshot could not be used")
	}
}

// catchUp brings the filter and the spellings up to the log's head, as a
// call does before it trusts them: the follower runs it between calls.
// Its errors are the next call's to meet.
func (ix *Index) catchUp(ctx context.Context) {
	if ix.enter() != nil {
		return
	}
	defer ix.leave()
	if err := ix.catchUpNow(ctx); err != nil && !errors.Is(err, context.Canceled) {
		ix.m.setCatchUpError(err)
	}
}

// catchUpNow brings the filter and the spellings up to the log's head
// (the caller is inside the index's life).
func (ix *Index) catchUpNow(ctx context.Context) error {
	c, err := ix.look(ctx)
	if err != nil {
		return err
	}
	defer c.end()
	return c.head(ctx)
}
