package rebuild

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// rebuilder is an index's side of rebuilding: the index's turn (one
// rebuild or Reload of the index at a time; the database's scans turn,
// taken after it, lets one scan run in the database at a time) and the
// state of its automatic rebuilds (autorebuild.go).
type rebuilder struct {
	turn chan struct{} // capacity 1: held by the index's rebuild or Reload in progress
	auto autoState
}

func (r *rebuilder) init() { r.turn = make(chan struct{}, 1) }

// Rebuild replaces the filter with one built from a full scan of the
// source:
//
//	bypass (every query about this collection → SQLite) → scan (the keys
//	read in chunks, hashed and set by a builder goroutine) → record the
//	scan and the stored spellings found → publish (one atomic pointer
//	store) → save the snapshot → compact the log.
//
// If the source's triggers were lost (the app's migration dropped or
// moved them), it attaches the source again first. If the scan fails or
// ctx ends, the half-built filter is dropped, never served, and the
// previous filter (or bypass) answers again. If only the save fails, the
// new filter serves (it is complete) and the error is returned. Rebuilds
// of the collections of a database scan in turn: a second call waits for
// the first's scan (ctx bounds the wait). Close stops a rebuild at its next
// chunk of keys, and a call waiting for its turn (ErrClosed); DB.Suspend
// does too (ErrSuspended), and a Rebuild asked while suspended returns
// ErrSuspended at once.
//
// Progress is called from a goroutine of its own (see Source.Progress),
// so a callback may call any method of any index. A Progress that panics
// while the scan runs stops the rebuild (the previous filter, or SQLite,
// answers again); one that panics in the last call, which comes once the
// scan has ended, stops nothing (the new filter serves). Either way the
// panic goes on in Rebuild's caller once the rebuild has ended.
func (ix *Index) Rebuild(ctx context.Context) error {
	if err := ix.enter(); err != nil {
		return err
	}
	defer ix.leave()
	if ix.db.cfg.ReadOnly {
		return fmt.Errorf("rebuild: %w", ErrReadOnly)
	}
	rctx, done, err := ix.db.suspendable(ctx)
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	ix.up.app.Ask() // Wait waits for it ...
	ix.up.app.Start()
	wait, err := ix.rebuild(rctx, reason{text: "asked by the app"})
	if err != nil && interrupted(rctx) {
		err = fmt.Errorf("rebuild: %w", ErrSuspended)
		if ix.filter() == nil { // nothing serves (an attach it made stays): the worker scans after Resume
			ix.askRebuild(reason{text: "asked by the app, interrupted by Suspend"})
		}
	}
	done()
	ix.up.app.Done() // ... but not for its last Progress call, which may call Wait
	ix.life.Park(1)  // Close, from a Progress callback, does not wait for this wait
	p := wait()
	ix.life.Park(-1)
	if p != nil {
		panic(p)
	}
	return err
}

// rebuildNow is the worker's rebuild job. It returns what remains once
// the job counts as done (for Wait, which a Progress callback may call):
// waiting for the last Progress call, parked (Close, from the callback,
// waits neither for it nor for the worker), on a goroutine of its own
// (worker.finish), so that the worker runs the next job meanwhile.
func (ix *Index) rebuildNow(ctx context.Context) (after func()) {
	why := reason{text: "asked for"}
	if r := ix.up.why.Swap(nil); r != nil {
		why = *r
	}
	wait, err := ix.rebuild(ctx, why) // the error is kept in the metrics
	ix.rebuildFailed(ctx, err)
	return func() {
		ix.life.Park(1)
		ix.db.life.Park(1)
		if p := wait(); p != nil {
			ix.m.setError(fmt.Errorf("rebuild: a Progress callback panicked: %v", p))
		}
		ix.db.life.Park(-1)
		ix.life.Park(-1)
	}
}

// takeTurns takes the index's turn, then the database's scans turn
// (ctx bounds the wait, and so does Close: the rebuild holding a turn may
// be stuck behind a callback that is closing this index); the returned
// function gives them back.
func (ix *Index) takeTurns(ctx context.Context, scans bool) (func(), error) {
	take := func(turn chan struct{}) error {
		select {
		case turn <- struct{}{}:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-ix.life.ctx.Done():
			return ErrClosed
		}
	}
	if err := take(ix.rb.turn); err != nil {
		return nil, err
	}
	if !scans {
		return func() { <-ix.rb.turn }, nil
	}
	if err := take(ix.db.scans); err != nil {
		<-ix.rb.turn
		return nil, err
	}
	return func() { <-ix.db.scans; <-ix.rb.turn }, nil
}

// rebuild takes the turns, attaches the source if its triggers are not in
// place, and rebuilds; wait waits for the last Progress call and returns
// the value a callback panicked with. A first attach (by this index's
// open) whose rebuild fails is undone, leaving the database as it was.
func (ix *Index) rebuild(ctx context.Context, why reason) (wait func() any, err error) {
	wait = func() any { return nil }
	start := time.Now()
	defer func() {
		if err != nil {
			err = fmt.Errorf("rebuild: %w", err)
			ix.m.setError(err)
		}
	}()
	release, err := ix.takeTurns(ctx, true)
	if err != nil {
		return wait, err
	}
	defer release()
	c, err := ix.look(ctx)
	if err != nil {
		return wait, err
	}
	defer c.end()
	// The source as it is now, not as a call last resolved it: DDL since
	// (an attach undone, a Detach, a migration) would send the rebuild
	// to scan a source whose triggers are gone, for a filter the next
	// call drops.
	if schema, err := c.schema(ctx); err != nil {
		return wait, err
	} else if schema != c.b.schema {
		if c.b, err = retry(func() (*binding, error) { return ix.bind(ctx, c) }); err != nil {
			return wait, err
		}
		if c.b.err != nil {
			return wait, c.b.err
		}
	}
	c.putReader() // the scan and its count take their own
	f, src := c.f, c.b.src
	if ix.cfg.Snapshot != "" {
		ix.checkTarget(f, src)
	}
	if !src.Logged {
		var info store.AttachInfo
		if src, info, err = f.st.Attach(ctx, ix.cfg.Table, ix.cfg.Column, ix.cfg.AllowUnindexed); err != nil {
			return wait, err
		}
		if info.Reattached {
			ix.m.reattached.Add(1)
		}
		if info.Created {
			ix.up.created.Store(src)
		}
		ix.up.undone.Store(nil)
		// The index's binding is the attached source from now on: a call
		// must not take the one it resolved before the attach (triggers
		// not in place) as the truth about the filter this builds.
		c.b = ix.rebindTo(c, src)
	}
	s, rep, err := ix.build(ctx, f, src, why, start)
	wait = rep.wait
	if err != nil {
		// A first attach whose scan failed, or did not end before the
		// index closed, is undone: the app never had its filter, and the
		// log would grow unread. One interrupted by Suspend stays: the
		// scan runs again after Resume.
		if created := ix.up.created.Load(); created != nil && created.ID == src.ID && ix.filter() == nil && !interrupted(ctx) {
			ix.up.undone.Store(created) // ours, not the app's Detach
			if uerr := f.st.Undo(ctx, created); uerr != nil {
				err = errors.Join(err, fmt.Errorf("undo the attach: %w", uerr))
			}
			ix.up.created.Store(nil)
		}
		return wait, err
	}
	ix.up.created.Store(nil)
	if ix.cfg.Snapshot == "" {
		return wait, nil
	}
	if ix.checkTarget(f, src); errors.Is(ix.targetError(), ErrUnsafeTarget) {
		return wait, nil // a file that is not the library's: reported in Stats.SnapshotError, never replaced
	}
	post := context.WithoutCancel(ctx) // the new filter serves: its save and compaction are done (see build)
	if err := ix.saveNow(post, s); err != nil {
		return wait, err
	}
	return wait, ix.compact(post, f, src)
}

// build scans the source into a new filter and publishes it (the caller
// holds the turns): under the scan's lease, in bypass, the scan read in
// the schema the source was resolved in; then the database records the
// scan and the stored spellings it found. rep delivers the scan's
// Progress calls.
func (ix *Index) build(ctx context.Context, f *file, src *store.Source, why reason, start time.Time) (_ *serving, rep *reporter, err error) {
	rep = ix.newReporter()
	// The lease keeps log compaction (by any process) from deleting the
	// entries this rebuild catches up from.
	l, err := f.st.TakeLease(ctx, src)
	if err != nil {
		rep.finish()
		return nil, rep, err
	}
	defer f.st.ReleaseLease(ctx, src, l)
	if !ix.startRebuilding() {
		rep.finish()
		return nil, rep, ErrClosed
	}
	bypassed := time.Now()
	s, spellings, err := ix.scan(ctx, f, src, l, why, rep)
	if err != nil {
		ix.restore()
		return nil, rep, err
	}
	// What the scan's spellings cover: the scan's head, read before the
	// filter is published (calls then catch it up further, and the
	// spellings logged meanwhile are not in the scan's list).
	scanned := s.at.gen()
	prev, ok := ix.publish(s)
	if !ok {
		_ = s.f.Close()
		return nil, rep, ErrClosed
	}
	if prev != nil {
		_ = prev.f.Close()
	}
	ix.m.rebuildDone(start, time.Since(bypassed), why)
	if k := ix.db.cfg.knobs.published; k != nil {
		k()
	}
	// The filter serves; now the database's records, which only writes
	// (and so may wait for the app's transactions) need. They are done
	// whatever ctx does now (a Suspend, the app's cancel): the filter they
	// record serves already, and a scan record left out would cost the
	// next open a scan.
	if err := f.st.MarkScanned(context.WithoutCancel(ctx), src, s.epoch, scanned, spellings); err != nil {
		return s, rep, err
	}
	return s, rep, nil
}

// compact deletes the log entries more than LogRetain behind the last
// snapshot saved: LogRetain entries stay, up to it.
func (ix *Index) compact(ctx context.Context, f *file, src *store.Source) error {
	if saved := ix.snap.saved.Load(); saved > ix.cfg.LogRetain {
		return f.st.Compact(ctx, src, saved-ix.cfg.LogRetain+1)
	}
	return nil
}
