package rebuild

import (
	"context"
	"fmt"

	"github.com/syncfilter/syncfilter/snapshot"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// readSnapshot reads Config.Snapshot and checks that it may serve this
// source: format and integrity (package snapshot), normalization, dataset
// id, and a generation inside the log's range.
func (ix *Index) readSnapshot(ctx context.Context) (*serving, error) {
	snap, err := snapshot.ReadFile(ix.cfg.Snapshot)
	if err != nil {
		return nil, fmt.Errorf("load snapshot: %w", err)
	}
	if err := snap.CheckNormalization(); err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", ix.cfg.Snapshot, err)
	}
	if err := snap.CheckDataset(ix.st.datasetID); err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", ix.cfg.Snapshot, err)
	}
	head, floor, err := ix.st.head(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case snap.Generation > head:
		// The database is older than the snapshot (restored from a backup):
		// entries it logs from now on would reuse generations the snapshot
		// claims to cover.
		return nil, fmt.Errorf("load snapshot %s: generation %d, database at %d: %w", ix.cfg.Snapshot, snap.Generation, head, ErrCannotCatchUp)
	case snap.Generation < floor:
		return nil, fmt.Errorf("load snapshot %s: generation %d, log compacted up to %d: %w", ix.cfg.Snapshot, snap.Generation, floor, ErrCannotCatchUp)
	}
	f, err := syncfilter.Thaw(snap.Image)
	if err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", ix.cfg.Snapshot, err)
	}
	s := &serving{f: f, capacity: snap.Capacity}
	s.gen.Store(snap.Generation)
	return s, nil
}

// load serves from the snapshot file at Open.
func (ix *Index) load(ctx context.Context) error {
	s, err := ix.readSnapshot(ctx)
	if err != nil {
		return err
	}
	return ix.adopt(ctx, s)
}

// Reload replaces the serving filter with the snapshot file, typically
// after a cron job rebuilt it, and catches up on everything committed
// since. The current filter keeps answering until the new one is
// published; if the file is refused, nothing changes and the reason is
// returned.
func (ix *Index) Reload(ctx context.Context) error {
	if err := ix.enter(); err != nil {
		return err
	}
	defer ix.leave()
	if ix.cfg.Snapshot == "" {
		return fmt.Errorf("reload: no snapshot configured: %w", ErrBadConfig)
	}
	ix.rebuildMu.Lock()
	defer ix.rebuildMu.Unlock()
	s, err := ix.readSnapshot(ctx)
	if err == nil {
		err = ix.adopt(ctx, s)
	}
	if err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	return nil
}

// adopt publishes a filter read from the snapshot file and closes the one
// it replaces.
func (ix *Index) adopt(ctx context.Context, s *serving) error {
	gen := s.gen.Load()
	prev := ix.cur.Load()
	if err := ix.publish(ctx, s); err != nil {
		_ = s.f.Close()
		return err
	}
	if prev != nil {
		_ = prev.f.Close()
	}
	ix.savedGen.Store(gen)
	ix.m.loads.Add(1)
	return nil
}

// Save writes the serving filter to the snapshot file, atomically.
func (ix *Index) Save(ctx context.Context) error {
	if err := ix.enter(); err != nil {
		return err
	}
	defer ix.leave()
	if ix.cfg.Snapshot == "" {
		return fmt.Errorf("save: no snapshot configured: %w", ErrBadConfig)
	}
	if ix.cfg.ReadOnly {
		return fmt.Errorf("save: %w", ErrReadOnly)
	}
	s := ix.cur.Load()
	if s == nil {
		return fmt.Errorf("save: %w", ErrNotServing)
	}
	return ix.save(ctx, s)
}

func (ix *Index) save(ctx context.Context, s *serving) error {
	gen := s.gen.Load() // read before the copy: the copy covers at least this
	img, err := s.f.Image(ctx)
	if err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	if err := checkTarget(ix.cfg.Snapshot, ix.cfg.Path, ix.st.datasetID, true, ix.cfg.ReplaceForeignFile); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	h := snapshot.Header{Capacity: s.capacity, Generation: gen, DatasetID: ix.st.datasetID, Created: now()}
	if err := snapshot.WriteFile(ix.cfg.Snapshot, h, img); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	for old := ix.savedGen.Load(); old < gen && !ix.savedGen.CompareAndSwap(old, gen); old = ix.savedGen.Load() {
	}
	return nil
}
