package rebuild

import (
	"context"
	"fmt"
	"os"
	"time"
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
// replaces cfg.Snapshot with a fresh filter, attaching the source first if
// no app has yet. It does not read the old snapshot, and leaves nothing
// running. A kill at any moment leaves the previous file in place.
// A running app picks the new file up with Reload, or at its next Open.
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
	ix.cron = true
	if err := ix.enter(); err != nil {
		return Report{}, err
	}
	err = ix.rebuild(ctx, "cron job")
	ix.leave()
	if err != nil {
		return Report{}, err
	}
	s := ix.filter()
	info, err := os.Stat(ix.cfg.Snapshot)
	if err != nil {
		return Report{}, fmt.Errorf("build snapshot: %w", err)
	}
	counts := ix.m.lastScanCounts()
	p := s.f.Params()
	health := s.f.Stats()
	return Report{
		Snapshot: src.Snapshot, Rows: counts.Rows, Counts: counts, Generation: ix.savedGen.Load(),
		M: p.M, K: p.K, Capacity: s.capacity, EstimatedFPR: health.EstimatedFPR, Bytes: info.Size(), Took: time.Since(start),
	}, nil
}
