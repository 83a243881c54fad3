package ops

import (
	"context"
	"errors"
	"os"

	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
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
	Records       int64  // snapshot records of the source

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
	RebuildDue   bool // EstimatedFPR above FPR × RebuildFactor
	Bytes        int64
}

// Describe reports the state of a source and of its snapshot (src's
// Snapshot, optional), opening the database read-only: nothing is created
// or written.
func Describe(ctx context.Context, dcfg rebuild.DBConfig, src rebuild.Source) (Status, error) {
	dcfg.ReadOnly = true
	ix, err := rebuild.Open(ctx, dcfg, src)
	if err != nil {
		return Status{}, err
	}
	defer ix.Close(ctx)
	k := keeper(ix)
	c, err := k.G.Look(ctx)
	if err != nil {
		return Status{}, err
	}
	s := c.Src()
	var keyed []snapshot.Option // the file's key checked against the database's
	if s.Keyed {
		keyed = append(keyed, snapshot.WithKey(s.Key))
	}
	out := Status{Table: s.Table, Column: s.Column, Attached: s.Row && s.Logged}
	if s.Row {
		out.DatasetID = s.DatasetID
	}
	conn, err := c.Reader(ctx)
	if err != nil {
		c.End()
		return Status{}, err
	}
	d, err := conn.Describe(ctx, s)
	c.End()
	if err != nil {
		return Status{}, err
	}
	out.Rows, out.Generation, out.LogFloor, out.LogEntries = d.Rows, d.Generation, d.LogFloor, d.LogEntries
	out.Spellings, out.Triggers, out.Records = d.Spellings, d.Triggers, d.Records
	if src.Snapshot == "" {
		return out, nil
	}
	werr := ix.Wait(ctx) // the snapshot's load, in the background
	if werr != nil && !errors.Is(werr, store.ErrNotServing) {
		return Status{}, werr
	}
	st := ix.Stats()
	snap := &SnapshotStatus{Path: src.Snapshot, Usable: st.Serving}
	if !st.Serving {
		snap.Reason = k.LastErr()
		if snap.Reason == nil {
			snap.Reason = errors.New("the source is not attached: the database vouches for no snapshot")
		}
	}
	out.Snapshot = snap
	h, health, _, err := snapshot.VerifyFile(src.Snapshot, keyed...)
	if err != nil {
		if snap.Reason == nil {
			snap.Reason = err
		}
		return out, nil
	}
	snap.Generation, snap.Items, snap.Capacity = h.Generation, h.Items, h.Capacity
	snap.FillRatio, snap.EstimatedFPR = health.FillRatio, health.EstimatedFPR
	snap.RebuildDue = k.Due(health.EstimatedFPR)
	if out.Generation > h.Generation {
		snap.Lag = out.Generation - h.Generation
	}
	if info, err := os.Stat(src.Snapshot); err == nil {
		snap.Bytes = info.Size()
	}
	return out, nil
}
