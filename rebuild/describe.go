package rebuild

import (
	"context"
	"errors"
	"os"

	"github.com/syncfilter/syncfilter/snapshot"
)

// Status is what the database records about a source and what its
// snapshot file is worth, read without changing anything (Describe).
type Status struct {
	Table, Column string // as SQLite stores them
	Attached      bool   // the library's record of the source is complete
	DatasetID     [16]byte
	Rows          int64  // rows whose id is not NULL
	Generation    uint64 // the newest log entry
	LogFloor      uint64 // log entries up to here were compacted away
	LogEntries    int64  // log entries kept
	Spellings     int64  // stored non-NFC spellings noted
	Triggers      int    // of the source's two triggers, how many exist
	Records       int64  // snapshot records (syncfilter_snapshots) of the source

	Snapshot *SnapshotStatus // nil when no snapshot file was given
}

// SnapshotStatus describes the snapshot file of a source.
type SnapshotStatus struct {
	Path         string
	Usable       bool   // the index would serve from it
	Reason       error  // why not, when it is not
	Generation   uint64 // the state of the source it covers
	Lag          uint64 // log entries committed after it
	Items        uint64
	Capacity     uint64
	FillRatio    float64
	EstimatedFPR float64
	RebuildDue   bool // EstimatedFPR above FPR × AutoRebuild.Factor
	Bytes        int64
}

// Describe reports the state of a source and of its snapshot (its
// Snapshot, optional) read-only: the database is opened read-only and
// nothing is created or written (DBConfig.ReadOnly is implied).
func Describe(ctx context.Context, dcfg DBConfig, cfg Source) (Status, error) {
	dcfg.ReadOnly = true
	ix, err := Open(ctx, dcfg, cfg)
	if err != nil {
		return Status{}, err
	}
	defer ix.Close(ctx)
	if err := ix.enter(); err != nil {
		return Status{}, err
	}
	defer ix.leave()
	c, err := ix.look(ctx)
	if err != nil {
		return Status{}, err
	}
	defer c.end()
	src := c.b.src
	out := Status{Table: src.Table, Column: src.Column, Attached: src.Row && src.Logged}
	if src.Row {
		out.DatasetID = src.DatasetID
	}
	conn, err := c.reader(ctx)
	if err != nil {
		return Status{}, err
	}
	d, err := conn.Describe(ctx, src)
	if err != nil {
		return Status{}, err
	}
	out.Rows, out.Generation, out.LogFloor, out.LogEntries = d.Rows, d.Generation, d.LogFloor, d.LogEntries
	out.Spellings, out.Triggers, out.Records = d.Spellings, d.Triggers, d.Records
	if cfg.Snapshot == "" {
		return out, nil
	}
	if err := ix.Wait(ctx); err != nil && !errors.Is(err, ErrNotServing) { // the snapshot's load, in the background
		return Status{}, err
	}
	st := ix.Stats()
	snap := &SnapshotStatus{Path: cfg.Snapshot, Usable: st.Serving, Reason: st.SnapshotError}
	if !st.Attached && snap.Reason == nil {
		snap.Reason = errors.New("the source is not attached: the database vouches for no snapshot")
	}
	h, health, _, err := snapshot.VerifyFile(cfg.Snapshot)
	if err != nil {
		if snap.Reason == nil {
			snap.Reason = err
		}
		out.Snapshot = snap
		return out, nil
	}
	snap.Generation, snap.Items, snap.Capacity = h.Generation, h.Items, h.Capacity
	snap.FillRatio, snap.EstimatedFPR = health.FillRatio, health.EstimatedFPR
	snap.RebuildDue = health.EstimatedFPR > ix.cfg.FPR*ix.cfg.AutoRebuild.Factor
	if out.Generation > h.Generation {
		snap.Lag = out.Generation - h.Generation
	}
	if info, err := os.Stat(cfg.Snapshot); err == nil {
		snap.Bytes = info.Size()
	}
	out.Snapshot = snap
	return out, nil
}
