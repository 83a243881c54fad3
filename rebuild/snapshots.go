package rebuild

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/syncfilter/syncfilter/internal/fsafe"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/snapshot"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// snapshots is where an index's snapshots may be saved, and how far the
// last one saved or loaded covers the log.
type snapshots struct {
	targetErr atomic.Pointer[error] // why snapshot saves are refused, if they are
	saved     atomic.Uint64         // generation of the last snapshot saved or loaded
}

// PlausibleFactor bounds the size of a snapshot the index loads: at most
// this many times the bits a filter would need for every row the database
// file could hold (its size as SQLite counts it: pages × page size, read
// from the header without a scan), or for Source.Capacity. A larger claim
// is refused (ErrImplausible) before the payload is read. The database's
// record of the file (checksum, generation, m) is checked first; this
// bound holds even against a record forged into the database.
const PlausibleFactor = 16

// readSnapshot reads Source.Snapshot and checks that it may serve the
// call's source, cheapest and most decisive first, all before the payload
// is read: the file's claim (format, header checksum, length), the
// normalization, the dataset id, the database's record of this very file
// (checksum, generation, m), the size the database warrants, and a
// generation inside the log's range. Only then is the payload read and
// verified against the recorded checksum. Nothing here is O(rows).
func (ix *Index) readSnapshot(ctx context.Context, c *call) (*serving, error) {
	path := ix.cfg.Snapshot
	claim, err := snapshot.ReadClaim(path)
	if err != nil {
		return nil, fmt.Errorf("load snapshot: %w", err)
	}
	src := c.b.src
	if err := claim.CheckNormalization(); err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", path, err)
	}
	if err := claim.CheckDataset(src.DatasetID); err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w (the database's source was attached at %s; a snapshot of another database, or of this one before it was created again, is never used)",
			path, err, src.CreatedAt)
	}
	conn, err := c.reader(ctx)
	if err != nil {
		return nil, err
	}
	ok, err := conn.Vouched(ctx, src, claim.Checksum, claim.Generation, claim.Params.M)
	if err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", path, err)
	}
	if !ok {
		return nil, fmt.Errorf("load snapshot %s: checksum %x at generation %d: %w", path, claim.Checksum[:8], claim.Generation, ErrNotVouched)
	}
	if err := ix.plausible(ctx, conn, claim.Params.M); err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", path, err)
	}
	switch h := c.h; {
	case claim.Generation > h.Seq:
		// Recorded, yet ahead of the log: the log's newest entries were
		// deleted by hand. Entries it logs from now on would reuse
		// generations the snapshot claims to cover.
		return nil, fmt.Errorf("load snapshot %s: generation %d, database at %d: %w", path, claim.Generation, h.Seq, ErrCannotCatchUp)
	case claim.Generation < h.Floor:
		return nil, fmt.Errorf("load snapshot %s: generation %d, log compacted up to %d: %w", path, claim.Generation, h.Floor, ErrCannotCatchUp)
	}
	snap, err := snapshot.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load snapshot: %w", err)
	}
	if snap.Checksum != claim.Checksum {
		return nil, fmt.Errorf("load snapshot %s: the file changed while being read: %w", path, ErrNotVouched)
	}
	f, err := syncfilter.ThawOn(ix.db.writer, snap.Image)
	if err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", path, err)
	}
	// The entry at the snapshot's generation is this history's (the
	// database vouches for the file): its tag is the filter's mark.
	tag, err := conn.TagAt(ctx, src, snap.Generation)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("load snapshot %s: %w", path, err)
	}
	s := &serving{id: newID(), f: f, capacity: snap.Capacity, file: c.f, src: src, epoch: c.h.Epoch, built: time.Now()}
	s.at.set(mark{gen: snap.Generation, tag: tag})
	s.floor.Store(c.h.Floor)
	return s, nil
}

// plausible refuses a filter of m bits far larger than the database
// warrants: more than PlausibleFactor times what an unblocked Bloom filter
// needs (n·ln(1/FPR)/ln²2 bits; blocking adds a few percent) for as many
// keys as the file has bytes (a row holds at least a byte of key and a
// few of record and index), or as Capacity. A closed form: sizing the
// filter exactly for the bound would cost milliseconds at open.
func (ix *Index) plausible(ctx context.Context, conn *store.Conn, m uint64) error {
	bytes, err := conn.FileBytes(ctx)
	if err != nil {
		return err
	}
	keys := float64(max(ix.cfg.Capacity, uint64(bytes), 1024))
	limit := PlausibleFactor * keys * math.Log(1/ix.cfg.FPR) / (math.Ln2 * math.Ln2)
	if float64(m) > limit {
		return fmt.Errorf("m = %d bits for a database of %d bytes, at most %.0f: %w", m, bytes, limit, ErrImplausible)
	}
	return nil
}

// load serves from the snapshot file, caught up on the log: the worker's
// load job at open, and Reload.
func (ix *Index) load(ctx context.Context) error {
	c, err := ix.look(ctx)
	if err != nil {
		return err
	}
	defer c.end()
	if err := c.head(ctx); err != nil {
		return err
	}
	if !c.b.src.Logged {
		return errors.New("the source's triggers are not in place: no snapshot can vouch for it")
	}
	s, err := ix.readSnapshot(ctx, c)
	if err != nil {
		return err
	}
	prev, ok := ix.install(s)
	if !ok {
		_ = s.f.Close()
		return ErrClosed
	}
	if prev != nil {
		_ = prev.f.Close()
	}
	raise(&ix.snap.saved, s.at.gen())
	ix.m.loads.Add(1)
	ix.m.setSnapshotError(nil)
	// Caught up before calls rely on it: the log the app wrote after the
	// snapshot was saved (after a restart without Close, its last
	// session's writes).
	return c.head(ctx)
}

// Reload replaces the serving filter with the snapshot file, typically
// after a cron job rebuilt it, and catches it up on everything committed
// since. The current filter keeps answering until the new one is
// published; if the file is refused, nothing changes and the reason is
// returned. It waits for a rebuild of its own index in progress, not for
// other collections'.
func (ix *Index) Reload(ctx context.Context) error {
	if err := ix.enter(); err != nil {
		return err
	}
	defer ix.leave()
	if ix.cfg.Snapshot == "" {
		return fmt.Errorf("reload: no snapshot configured: %w", ErrBadConfig)
	}
	release, err := ix.takeTurns(ctx, false)
	if err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	defer release()
	if err := ix.load(ctx); err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	return nil
}

// Save writes the serving filter to the snapshot file, atomically, and
// the stored spellings the index learned from the log to the spellings
// table.
func (ix *Index) Save(ctx context.Context) error {
	if err := ix.enter(); err != nil {
		return err
	}
	defer ix.leave()
	if ix.cfg.Snapshot == "" {
		return fmt.Errorf("save: no snapshot configured: %w", ErrBadConfig)
	}
	if ix.db.cfg.ReadOnly {
		return fmt.Errorf("save: %w", ErrReadOnly)
	}
	s := ix.filter()
	if s == nil {
		switch job := ix.up.describe(); {
		case job != "" && ix.db.suspended():
			return fmt.Errorf("save: %w yet (%s asked for, paused while the database is suspended: Resume, then Wait)", ErrNotServing, job)
		case job != "":
			return fmt.Errorf("save: %w yet (%s asked for and not done: Wait for it)", ErrNotServing, job)
		}
		return fmt.Errorf("save: %w", ErrNotServing)
	}
	return ix.saveNow(ctx, s)
}

// saveNow saves s, unless the snapshot path may not be written
// (checkTarget; checked again here: a file may have appeared).
func (ix *Index) saveNow(ctx context.Context, s *serving) error {
	f, src := s.file, s.src
	if !f.acquire() {
		return fmt.Errorf("save snapshot: %w", ErrClosed)
	}
	defer f.release()
	ix.checkTarget(f, src)
	if err := ix.targetError(); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	gen := s.at.gen() // read before the copy: the copy covers at least this
	img, err := s.f.Image(ctx)
	if errors.Is(err, syncfilter.ErrClosed) { // dropped or replaced meanwhile
		return fmt.Errorf("save snapshot: %w", ErrNotServing)
	}
	if err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	if sp := ix.sp.cur.Load(); sp != nil && sp.table && sp.f == f && sp.srcID == src.ID && sp.epoch == s.epoch {
		// The spellings learned from the log go to the spellings table,
		// so that the next open needs not read the log for them.
		if err := f.st.NoteSpellings(ctx, src, sp.epoch, sp.at.gen(), sp.pairs()); err != nil {
			return fmt.Errorf("save snapshot: %w", err)
		}
	}
	h := snapshot.Header{Capacity: s.capacity, Generation: gen, DatasetID: src.DatasetID, Created: ix.db.cfg.knobs.clock()}
	record := func(sum [32]byte) error {
		return f.st.RecordSnapshot(ctx, src, s.epoch, sum, gen, img.Params().M, ix.cfg.Snapshot)
	}
	if err := snapshot.WriteFileCommit(ix.cfg.Snapshot, h, img, ix.cfg.SnapshotMode, record, fsafe.DatabaseFiles(f.st.Path.Real)...); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	raise(&ix.snap.saved, gen)
	return nil
}

// checkTarget notes whether snapshots may be saved at Source.Snapshot
// (see target.go): not over the database or its files, a directory, a
// file that is not a snapshot or another dataset's snapshot (unless
// ReplaceForeignFile). A refusal is reported in Stats.SnapshotError;
// nothing is saved there.
func (ix *Index) checkTarget(f *file, src *store.Source) {
	err := checkTarget(ix.cfg.Snapshot, f.st.Path.Real, src.DatasetID, src.Row, ix.cfg.ReplaceForeignFile)
	if err == nil {
		ix.snap.targetErr.Store(nil)
		return
	}
	ix.snap.targetErr.Store(&err)
}

// targetError returns why snapshots may not be saved, or nil.
func (ix *Index) targetError() error {
	if e := ix.snap.targetErr.Load(); e != nil {
		return *e
	}
	return nil
}

// sweepTemp removes the temporary files that saves killed outright left
// beside the snapshot (snapshot.SweepTemp). A save sweeps them too, but
// an index that does not save again (its source detached, say) would
// keep them; the opening load sweeps them.
func (ix *Index) sweepTemp() {
	if ix.db.cfg.ReadOnly || ix.cfg.Snapshot == "" {
		return
	}
	snapshot.SweepTemp(ix.cfg.Snapshot)
}
