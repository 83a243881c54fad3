package rebuild

import (
	"context"
	"fmt"
	"math"

	"github.com/syncfilter/syncfilter/snapshot"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// PlausibleFactor bounds the size of a snapshot the index loads: at most
// this many times the bits a rebuild would size for the source now
// (rows × Headroom, Capacity, 1024 keys at least, at Config.FPR). A larger
// claim is refused (ErrImplausible) before the payload is read; a source
// that shrank that much is due for a rebuild anyway.
const PlausibleFactor = 16

// readSnapshot reads Config.Snapshot and checks that it may serve this
// source, cheapest and most decisive first, all before the payload is
// read: the file's claim (format, header checksum, length), the
// normalization, the dataset id, the database's record of this very file
// (checksum, generation, m), the size the source warrants, and a
// generation inside the log's range. Only then is the payload read and
// verified against the recorded checksum.
func (ix *Index) readSnapshot(ctx context.Context) (*serving, error) {
	path := ix.cfg.Snapshot
	claim, err := snapshot.ReadClaim(path)
	if err != nil {
		return nil, fmt.Errorf("load snapshot: %w", err)
	}
	if err := claim.CheckNormalization(); err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", path, err)
	}
	if err := claim.CheckDataset(ix.st.datasetID); err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", path, err)
	}
	ok, err := ix.st.vouched(ctx, claim.Checksum, claim.Generation, claim.Params.M)
	if err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", path, err)
	}
	if !ok {
		return nil, fmt.Errorf("load snapshot %s: checksum %x at generation %d: %w", path, claim.Checksum[:8], claim.Generation, ErrNotVouched)
	}
	if err := ix.plausible(ctx, claim.Params.M); err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", path, err)
	}
	head, floor, err := ix.st.head(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case claim.Generation > head:
		// Recorded, yet ahead of the log: the log's newest entries were
		// deleted by hand. Entries it logs from now on would reuse
		// generations the snapshot claims to cover.
		return nil, fmt.Errorf("load snapshot %s: generation %d, database at %d: %w", path, claim.Generation, head, ErrCannotCatchUp)
	case claim.Generation < floor:
		return nil, fmt.Errorf("load snapshot %s: generation %d, log compacted up to %d: %w", path, claim.Generation, floor, ErrCannotCatchUp)
	}
	snap, err := snapshot.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load snapshot: %w", err)
	}
	if snap.Checksum != claim.Checksum {
		return nil, fmt.Errorf("load snapshot %s: the file changed while being read: %w", path, ErrNotVouched)
	}
	f, err := syncfilter.Thaw(snap.Image)
	if err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", path, err)
	}
	s := &serving{f: f, capacity: snap.Capacity}
	s.gen.Store(snap.Generation)
	return s, nil
}

// plausible refuses a filter of m bits far larger than the source needs.
func (ix *Index) plausible(ctx context.Context, m uint64) error {
	rows, err := ix.st.countRows(ctx)
	if err != nil {
		return err
	}
	p, err := syncfilter.NewParams(ix.sizeFor(rows), ix.cfg.FPR)
	if err != nil {
		return fmt.Errorf("size filter for %d rows: %w", rows, err)
	}
	if limit := p.M * PlausibleFactor; m > limit {
		return fmt.Errorf("m = %d bits for %d rows, at most %d: %w", m, rows, limit, ErrImplausible)
	}
	return nil
}

// sizeFor is the capacity a rebuild gives a filter for rows keys.
func (ix *Index) sizeFor(rows int64) uint64 {
	return max(ix.cfg.Capacity, uint64(math.Ceil(float64(rows)*ix.cfg.Headroom)), 1024)
}

// loadSnapshot serves from the snapshot file at Open.
func (ix *Index) loadSnapshot(ctx context.Context) error {
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
	prev := ix.filter()
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
	s := ix.filter()
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
	record := func(sum [32]byte) error { return ix.st.recordSnapshot(ctx, sum, gen, img.Params().M) }
	if err := snapshot.WriteFileCommit(ix.cfg.Snapshot, h, img, ix.cfg.SnapshotMode, record); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	for old := ix.savedGen.Load(); old < gen && !ix.savedGen.CompareAndSwap(old, gen); old = ix.savedGen.Load() {
	}
	return nil
}
