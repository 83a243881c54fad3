package rebuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// Report describes a snapshot written by BuildSnapshot.
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

// BuildSnapshot is the cron job: it scans the source and atomically
// replaces src.Snapshot with a fresh filter, attaching the source first if
// no app has yet. It does not read the old snapshot, and leaves nothing
// running. A kill at any moment leaves the previous file in place; a
// failure (SIGINT, an error) after its first attach of the source undoes
// the attach. A snapshot path the library may not write to is refused
// before anything is written. A running app picks the new file up with
// Reload, or at its next Open.
func BuildSnapshot(ctx context.Context, dcfg DBConfig, src Source) (Report, error) {
	start := time.Now()
	if src.Snapshot == "" {
		return Report{}, fmt.Errorf("build snapshot: no snapshot file: %w", ErrBadConfig)
	}
	if dcfg.ReadOnly {
		return Report{}, fmt.Errorf("build snapshot: %w", ErrReadOnly)
	}
	src.AutoRebuild.Off, src.NoSaveOnClose = true, true
	if _, err := dcfg.withDefaults(); err != nil {
		return Report{}, err
	}
	if _, err := src.withDefaults(false); err != nil {
		return Report{}, err
	}
	if err := checkTargetDir(src.Snapshot); err != nil {
		return Report{}, err
	}
	db, err := openDB(ctx, dcfg, false)
	if err != nil {
		return Report{}, err
	}
	defer func() { _ = db.Close(context.WithoutCancel(ctx)) }()
	ix, err := db.newIndex(src, false)
	if err != nil {
		return Report{}, err
	}
	if err := ix.enter(); err != nil {
		return Report{}, err
	}
	defer ix.leave()
	s, err := ix.buildSnapshot(ctx, start)
	if err != nil {
		return Report{}, fmt.Errorf("rebuild: %w", err)
	}
	info, err := os.Stat(ix.cfg.Snapshot)
	if err != nil {
		return Report{}, fmt.Errorf("build snapshot: %w", err)
	}
	counts := ix.m.lastScanCounts()
	p := s.f.Params()
	return Report{
		Snapshot: src.Snapshot, Rows: counts.Rows, Counts: counts, Generation: ix.snap.saved.Load(),
		M: p.M, K: p.K, Capacity: s.capacity, EstimatedFPR: s.f.Stats().EstimatedFPR, Bytes: info.Size(), Took: time.Since(start),
	}, nil
}

// buildSnapshot attaches the source if needed, builds its filter and
// saves it: the cron job's only product is the file, so a refused path
// fails it before any write, and a first attach it made is undone
// whenever it fails before the file is saved.
func (ix *Index) buildSnapshot(ctx context.Context, start time.Time) (_ *serving, err error) {
	c, err := ix.look(ctx)
	if err != nil {
		return nil, err
	}
	defer c.end()
	c.putReader()
	f, src := c.f, c.b.src
	if ix.checkTarget(f, src); ix.targetError() != nil {
		return nil, ix.targetError()
	}
	var info store.AttachInfo
	if !src.Logged {
		if src, info, err = f.st.Attach(ctx, ix.cfg.Table, ix.cfg.Column, ix.cfg.AllowUnindexed); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil && info.Created {
				if uerr := f.st.Undo(ctx, src); uerr != nil {
					err = errors.Join(err, fmt.Errorf("undo the attach: %w", uerr))
				}
			}
		}()
	}
	s, rep, err := ix.build(ctx, f, src, reason{text: "cron job"}, start)
	if p := rep.wait(); p != nil {
		panic(p)
	}
	if err != nil {
		return nil, err
	}
	if err := ix.saveNow(ctx, s); err != nil {
		return nil, err
	}
	return s, ix.compact(ctx, f, src)
}
