package rebuild

import (
	"context"
	"errors"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/rebuild/internal/gate"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/rebuild/internal/upkeep"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// What the tests of this package use of the internals and of the
// operator's package (rebuild/ops imports this one, so its tests cannot
// import it): the same internal calls ops makes.

const MaxKeyBytes = store.MaxKeyBytes

var (
	ErrUnsafeTarget  = store.ErrUnsafeTarget
	ErrNotVouched    = store.ErrNotVouched
	ErrImplausible   = store.ErrImplausible
	ErrCannotCatchUp = store.ErrCannotCatchUp
	ErrNotAttached   = store.ErrNotAttached
	ErrHeld          = store.ErrHeld
	ErrKeyTooLong    = store.ErrKeyTooLong
)

type Report = upkeep.Report

// BuildSnapshot is ops.BuildSnapshot.
func BuildSnapshot(ctx context.Context, dcfg DBConfig, src Source) (Report, error) {
	src.NoAutoRebuild, src.NoSaveOnClose = true, true
	return upkeep.BuildSnapshot(ctx, dcfg, src, src.Snapshot, dcfg.ReadOnly)
}

// Detach is ops.Detach without force.
func Detach(ctx context.Context, cfg DBConfig, table, column string) error {
	return upkeep.Detach(ctx, cfg, table, column, false)
}

// forceDetach is ops.Detach with force.
func forceDetach(ctx context.Context, cfg DBConfig, table, column string) error {
	return upkeep.Detach(ctx, cfg, table, column, true)
}

// sources lists the sources db records.
func sources(ctx context.Context, db *DB) ([]store.Listed, error) { return db.bg.Sources(ctx) }

// describe reads what the database records about the source records.id
// of path, read-only.
func describe(t testing.TB, path string) store.Description {
	t.Helper()
	ctx := context.Background()
	ix, err := Open(ctx, DBConfig{Path: path, Driver: testdriver.Driver(), ReadOnly: true}, Source{Table: "records", Column: "id"})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close(ctx)
	c, err := ix.k.G.Look(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.End()
	conn, err := c.Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, err := conn.Describe(ctx, c.Src())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// serving returns the view whose filter answers, or nil.
func serving(ix *Index) *gate.View { return ix.k.G.Serving() }

// datasetID returns the source's dataset id as the index last resolved it.
func datasetID(ix *Index) (id [16]byte, attached bool) {
	if src := ix.k.G.Binding(); src != nil && src.Row {
		return src.DatasetID, true
	}
	return id, false
}

// positions returns the positions of the invalid keys.
func positions(e *InvalidKeysError) []int {
	out := make([]int, len(e.Keys))
	for i, k := range e.Keys {
		out[i] = k.Index
	}
	return out
}

// tstats is Stats with what the index keeps for itself (its log events).
type tstats struct {
	Stats
	Rebuilding    bool
	SnapshotError error // why the snapshot was not used, or may not be saved
	LastError     error // why no filter serves
	AutoRebuilds  uint64
	AutoReason    string
	CaughtUp      uint64
	Reattached    uint64
	SkippedKeys   uint64
	TargetFPR     float64
}

func stats(ix *Index) tstats {
	c := ix.k.Counts()
	// Stats and the mode from one state: the mode read before and after
	// Stats agree (a rebuild may begin or end between two reads).
	var st Stats
	var mode gate.Mode
	for range 100 {
		mode, st = ix.k.G.Mode(), ix.Stats()
		if ix.k.G.Mode() == mode {
			break
		}
	}
	return tstats{Stats: st, Rebuilding: mode == gate.Rebuilding, SnapshotError: c.SnapErr, LastError: ix.k.LastErr(),
		AutoRebuilds: c.Autos, AutoReason: c.AutoWhy, CaughtUp: ix.k.G.C.CaughtUp.Load(), Reattached: c.Reattached,
		SkippedKeys: ix.k.G.C.Skipped.Load(), TargetFPR: ix.k.FPR()}
}

var (
	_ = errors.New
	_ syncfilter.Params
)
