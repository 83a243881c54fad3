package upkeep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/gate"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// Rebuild runs a rebuild for the app and waits for it: ErrSuspended if
// Suspend interrupted it; a Progress callback's panic goes on in the
// caller.
func (k *Keeper) Rebuild(ctx context.Context) error {
	return k.db.run(ctx, kindRebuild, k, reason{text: "asked by the app"}).finish()
}

// Reload replaces the serving filter with the snapshot file, caught up.
func (k *Keeper) Reload(ctx context.Context) error {
	return k.db.run(ctx, kindLoad, k, reason{}).err
}

// rebuildJob attaches the source if its triggers (or its key) are not in
// place and rebuilds its filter: bypass, scan, publish, record, save, compact. A
// first attach (by this index's open) whose scan fails is undone, leaving
// the database as it was.
func (k *Keeper) rebuildJob(ctx context.Context, why reason) (rep *reporter, err error) {
	start := time.Now()
	defer func() {
		if err != nil {
			if p := rep.panic(); p != nil {
				err = fmt.Errorf("rebuild: a Progress callback panicked (%v): %w", p, err)
			} else {
				err = fmt.Errorf("rebuild: %w", err)
			}
			k.setErr(err)
			k.info("rebuild failed", slog.String("why", why.text), slog.Any("err", err))
		}
	}()
	c, err := k.G.Look(ctx)
	if err != nil {
		return rep, err
	}
	defer c.End()
	// The source as it is now: DDL since the last call (an attach undone,
	// a Detach, a migration) would send the scan to a source whose
	// triggers are gone.
	if err := c.Fresh(ctx); err != nil {
		return rep, err
	}
	if why.deferred && c.Detached() { // a Detach since the repair was asked: only an open attaches again
		return rep, fmt.Errorf("the source was detached: %w", store.ErrNoSource)
	}
	c.PutReader()
	f, src := c.F, c.Src()
	if k.cfg.Snapshot != "" {
		k.checkTarget(f, src)
	}
	if !src.Logged || !src.Keyed {
		if src, err = k.attach(ctx, c); err != nil {
			return rep, err
		}
	}
	v, rep, err := k.build(ctx, c, src, why, start)
	if err != nil {
		k.db.mu.Lock()
		created := k.mu.created
		k.db.mu.Unlock()
		if created != nil && created.ID == src.ID && k.G.Serving() == nil && !interrupted(ctx) {
			// The app never had this attach's filter, and its log would
			// grow unread: undone.
			if uerr := f.St.Undo(ctx, created); uerr != nil {
				err = errors.Join(err, fmt.Errorf("undo the attach: %w", uerr))
			}
			k.setCreated(nil)
		}
		return rep, err
	}
	k.setCreated(nil)
	if k.cfg.Snapshot == "" || errors.Is(k.targetErr(), store.ErrUnsafeTarget) {
		return rep, nil
	}
	post := context.WithoutCancel(ctx) // the new filter serves: its save and compaction are done
	if err := k.save(post, v); err != nil {
		return rep, err
	}
	return rep, k.compact(post, f, src)
}

// attach attaches the source in the call's file and notes what it did:
// a source it created is undone if its first scan fails.
func (k *Keeper) attach(ctx context.Context, c *gate.Call) (*store.Source, error) {
	info, err := c.Attach(ctx)
	if err != nil {
		return nil, err
	}
	src := c.Src()
	k.db.mu.Lock()
	k.mu.attach = false // what AskRebuild asked of the follower is done
	if info.Created {
		k.mu.created = src
	}
	if info.Reattached {
		k.mu.reattached++
	}
	k.db.mu.Unlock()
	return src, nil
}

func (k *Keeper) setCreated(s *store.Source) {
	k.db.mu.Lock()
	k.mu.created = s
	k.db.mu.Unlock()
}

// build scans the source into a new filter and publishes it, under the
// scan's lease (which keeps every process's compaction from deleting the
// entries the filter catches up from), in bypass meanwhile; then the
// database records the scan and the stored spellings it found.
func (k *Keeper) build(ctx context.Context, c *gate.Call, src *store.Source, why reason, start time.Time) (*gate.View, *reporter, error) {
	f := c.F
	rep := k.newReporter()
	l, err := f.St.TakeLease(ctx, src)
	if err != nil {
		return nil, rep, err
	}
	defer f.St.ReleaseLease(ctx, src, l)
	if !k.G.Rebuilding() {
		return nil, rep, store.ErrClosed
	}
	bypassed := time.Now()
	v, pending, err := k.scan(ctx, c, src, l, why, rep)
	if err != nil {
		k.G.Restore()
		return nil, rep, err
	}
	scanned := v.Mark().Gen
	prev, ok := k.G.Publish(v)
	if !ok {
		v.Close()
		return nil, rep, store.ErrClosed
	}
	prev.Close()
	took := time.Since(bypassed)
	k.db.mu.Lock()
	k.mu.lastErr = nil
	k.mu.rebuilds++
	k.mu.lastBuilt = time.Now()
	if why.auto {
		k.mu.autoTook, k.mu.autoEnded = took, k.mu.lastBuilt
	}
	k.db.mu.Unlock()
	k.info("rebuilt", slog.String("why", why.text), slog.Duration("took", time.Since(start)), slog.Duration("bypass", took), slog.Int64("rows", v.Rows))
	if h := k.db.Knobs.Published; h != nil {
		h()
	}
	// Recorded whatever ctx does now: the filter they record serves
	// already, and a scan record left out would cost the next open a scan.
	if err := f.St.MarkScanned(context.WithoutCancel(ctx), src, v.Epoch, scanned, pending); err != nil {
		return v, rep, err
	}
	return v, rep, nil
}

// compact deletes the log entries more than LogRetain behind the last
// snapshot saved.
func (k *Keeper) compact(ctx context.Context, f *gate.File, src *store.Source) error {
	if saved := k.Counts().Saved; saved > k.cfg.LogRetain {
		return f.St.Compact(ctx, src, saved-k.cfg.LogRetain+1)
	}
	return nil
}

// BuildSnapshot is the cron job's rebuild: it attaches the source if no
// app has yet, scans it and saves the snapshot, undoing a first attach
// whenever it fails before the file is saved.
func (k *Keeper) BuildSnapshot(ctx context.Context) (_ *gate.View, err error) {
	start := time.Now()
	t, ok := k.life.Enter()
	if !ok {
		return nil, store.ErrClosed
	}
	defer k.life.Leave(t)
	c, err := k.G.Look(ctx)
	if err != nil {
		return nil, err
	}
	defer c.End()
	c.PutReader()
	f, src := c.F, c.Src()
	if k.checkTarget(f, src); k.targetErr() != nil {
		return nil, k.targetErr()
	}
	var info store.AttachInfo
	if !src.Logged || !src.Keyed {
		if info, err = c.Attach(ctx); err != nil {
			return nil, err
		}
		src = c.Src()
		defer func() {
			if err != nil && info.Created {
				if uerr := f.St.Undo(ctx, src); uerr != nil {
					err = errors.Join(err, fmt.Errorf("undo the attach: %w", uerr))
				}
			}
		}()
	}
	v, rep, err := k.build(ctx, c, src, reason{text: "cron job"}, start)
	if p := rep.wait(); p != nil { // the cron job's own DB: no callback can wait for this one
		panic(p)
	}
	if err != nil {
		return nil, err
	}
	if err = k.save(ctx, v); err != nil {
		return nil, err
	}
	return v, k.compact(ctx, f, src)
}

// Report describes a snapshot written by the cron job's rebuild.
type Report struct {
	Snapshot     string        // the file written
	Rows         int64         // rows of the table (Counts.Rows)
	Counts       ScanCounts    // keys inserted and rows skipped, by reason
	Generation   uint64        // log generation the snapshot covers
	M            uint64        // filter bits
	K            uint32        // positions per key
	Capacity     uint64        // keys the filter was sized for
	EstimatedFPR float64       // from the bits written
	Bytes        int64         // size of the snapshot file
	Took         time.Duration // from start to the renamed, synced file
}

// BuildSnapshot opens the database (dcfg, a rebuild.DBConfig) and a
// keeper of src (a rebuild.Source, rebuilding only when asked, with the
// snapshot file path), rebuilds and saves, and closes everything.
func BuildSnapshot(ctx context.Context, dcfg, src any, path string, readOnly bool) (Report, error) {
	start := time.Now()
	switch {
	case path == "":
		return Report{}, fmt.Errorf("build snapshot: no snapshot file: %w", store.ErrBadConfig)
	case readOnly:
		return Report{}, fmt.Errorf("build snapshot: the database is opened read-only: %w", store.ErrBadConfig)
	}
	if err := CheckTargetDir(path); err != nil {
		return Report{}, err
	}
	db, err := OpenDB(ctx, dcfg)
	if err != nil {
		return Report{}, err
	}
	defer func() { _ = db.Close(context.WithoutCancel(ctx)) }()
	k, err := OpenKeeper(db, src)
	if err != nil {
		return Report{}, err
	}
	v, err := k.BuildSnapshot(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("rebuild: %w", err)
	}
	info, err := os.Stat(k.cfg.Snapshot)
	if err != nil {
		return Report{}, fmt.Errorf("build snapshot: %w", err)
	}
	c, p := k.Counts(), v.F.Params()
	return Report{Snapshot: path, Rows: c.Scan.Rows, Counts: c.Scan, Generation: c.Saved, M: p.M, K: p.K,
		Capacity: v.Capacity, EstimatedFPR: v.F.Stats().EstimatedFPR, Bytes: info.Size(), Took: time.Since(start)}, nil
}
