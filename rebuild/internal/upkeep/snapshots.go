package upkeep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"

	"github.com/syncfilter/syncfilter/internal/fsafe"
	"github.com/syncfilter/syncfilter/normalize"
	"github.com/syncfilter/syncfilter/rebuild/internal/gate"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/snapshot"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// PlausibleFactor bounds the size of a snapshot an index loads: at most
// this many times the bits a filter needs for every row the database file
// could hold (pages × page size, from the header), or for Capacity.
const PlausibleFactor = 16

// loadJob serves from the snapshot file, caught up on the log: the
// opening load, and Reload. A file that cannot be used is noted and a
// rebuild asked for (the app's Reload gets the error instead).
func (k *Keeper) loadJob(ctx context.Context, app bool) error {
	if !k.db.ReadOnly && !app {
		snapshot.SweepTemp(k.cfg.Snapshot)
	}
	err := k.load(ctx)
	switch {
	case err == nil, app:
	case ctx.Err() != nil: // interrupted: done again later
	default:
		k.db.mu.Lock()
		k.mu.snapErr = err
		k.db.mu.Unlock()
		k.info("snapshot not used", slog.Any("why", err))
		k.askRepair(err)
	}
	return err
}

func (k *Keeper) load(ctx context.Context) error {
	if err := k.publishSnapshot(ctx); err != nil {
		return err
	}
	// Caught up before calls rely on it: what the app wrote after the
	// snapshot was saved.
	return k.G.CatchUp(ctx)
}

// publishSnapshot reads the snapshot and makes it serve.
func (k *Keeper) publishSnapshot(ctx context.Context) error {
	if k.cfg.Snapshot == "" {
		return fmt.Errorf("load snapshot: none configured: %w", store.ErrBadConfig)
	}
	c, err := k.G.Look(ctx)
	if err != nil {
		return err
	}
	defer c.End()
	src := c.Src()
	if !src.Logged {
		return errors.New("load snapshot: the source's triggers are not in place: no snapshot can vouch for it")
	}
	conn, err := c.Reader(ctx)
	if err != nil {
		return err
	}
	h, err := conn.Head(ctx, src)
	if err != nil {
		return err
	}
	if !h.Scanned {
		return errors.New("load snapshot: no complete record of the source in the database: no snapshot can vouch for it")
	}
	v, err := k.readSnapshot(ctx, c, conn, h)
	if err != nil {
		return fmt.Errorf("load snapshot %s: %w", k.cfg.Snapshot, err)
	}
	// The filter covers the log up to its generation; the stored spellings
	// logged between the spellings table's and it are read here.
	if gen := v.Mark().Gen; h.SpellingsGen < gen {
		if err := c.TailSpellings(ctx, v, h.SpellingsGen, gen); err != nil {
			v.Close()
			return err
		}
	}
	prev, ok := k.G.Publish(v)
	if !ok {
		v.Close()
		return store.ErrClosed
	}
	prev.Close()
	k.db.mu.Lock()
	k.mu.saved = max(k.mu.saved, v.Mark().Gen)
	k.mu.lastErr, k.mu.snapErr = nil, nil
	k.db.mu.Unlock()
	return nil
}

// readSnapshot reads Source.Snapshot and checks that it may serve the
// call's source, cheapest and most decisive first, all before the payload
// is read: the file's claim, its version (the database's lowest or
// later), the policy (the source's Compare), the dataset, the database's key (a file of
// another key, a version 1 file among them, is refused), the database's
// record of this very file, the size the database warrants and a
// generation inside the log's range. Nothing here is O(rows).
func (k *Keeper) readSnapshot(ctx context.Context, c *gate.Call, conn *store.Conn, h store.Head) (*gate.View, error) {
	path, src := k.cfg.Snapshot, c.Src()
	if !src.Keyed {
		return nil, fmt.Errorf("the database holds no key of the positions yet (a rebuild by a writable open or `syncfilter rebuild` makes one): %w", snapshot.ErrWrongKey)
	}
	claim, err := snapshot.ReadClaim(path)
	if err != nil {
		return nil, err
	}
	if int(claim.Version) < src.Lowest {
		return nil, fmt.Errorf("version %d, the database accepts %d or later: %w", claim.Version, src.Lowest, snapshot.ErrUnsupportedVersion)
	}
	if err := claim.CheckPolicy(k.G.Compare().Policy(), normalize.UnicodeVersion()); err != nil {
		return nil, err
	}
	if err := claim.CheckDataset(src.DatasetID); err != nil {
		return nil, fmt.Errorf("%w (the database's source was attached at %s; a snapshot of another database, or of this one before it was created again, is never used)", err, src.CreatedAt)
	}
	if err := claim.CheckKey(src.Key); err != nil {
		return nil, err
	}
	ok, err := conn.Vouched(ctx, src, claim.Checksum, claim.Generation, claim.Params.M)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("checksum %x at generation %d: %w", claim.Checksum[:8], claim.Generation, store.ErrNotVouched)
	}
	if err := k.plausible(ctx, conn, claim.Params.M); err != nil {
		return nil, err
	}
	switch {
	case claim.Generation > h.Seq:
		return nil, fmt.Errorf("generation %d, database at %d: %w", claim.Generation, h.Seq, store.ErrCannotCatchUp)
	case claim.Generation < h.Floor:
		return nil, fmt.Errorf("generation %d, log compacted up to %d: %w", claim.Generation, h.Floor, store.ErrCannotCatchUp)
	}
	snap, err := snapshot.ReadFile(path, snapshot.WithKey(src.Key))
	if err != nil {
		return nil, err
	}
	if snap.Checksum != claim.Checksum {
		return nil, fmt.Errorf("the file changed while being read: %w", store.ErrNotVouched)
	}
	f, err := syncfilter.ThawOn(k.db.Writer, snap.Image)
	if err != nil {
		return nil, err
	}
	tag, err := conn.TagAt(ctx, src, snap.Generation)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	v := gate.NewView(f, c.F, src, h.Epoch, gate.Mark{Gen: snap.Generation, Tag: tag})
	v.Capacity = snap.Capacity
	return v, nil
}

// plausible refuses a filter of m bits far larger than the database
// warrants: more than PlausibleFactor times what a Bloom filter needs
// (n·ln(1/FPR)/ln²2 bits) for as many keys as the file has bytes, or as
// Capacity.
func (k *Keeper) plausible(ctx context.Context, conn *store.Conn, m uint64) error {
	bytes, err := conn.FileBytes(ctx)
	if err != nil {
		return err
	}
	keys := float64(max(k.cfg.Capacity, uint64(bytes), 1024))
	limit := PlausibleFactor * keys * math.Log(1/k.cfg.FPR) / (math.Ln2 * math.Ln2)
	if float64(m) > limit {
		return fmt.Errorf("m = %d bits for a database of %d bytes, at most %.0f: %w", m, bytes, limit, store.ErrImplausible)
	}
	return nil
}

// Save writes the serving filter to the snapshot file.
func (k *Keeper) Save(ctx context.Context) error {
	switch {
	case k.cfg.Snapshot == "":
		return fmt.Errorf("save: no snapshot configured: %w", store.ErrBadConfig)
	case k.db.ReadOnly:
		return fmt.Errorf("save: the database is opened read-only: %w", store.ErrBadConfig)
	case k.db.Paused():
		return fmt.Errorf("save: %w", store.ErrSuspended)
	}
	v := k.G.Serving()
	if v == nil {
		if job := k.Upkeep(); job != "" {
			return fmt.Errorf("save: %w yet (%s asked for and not done: Wait for it)", store.ErrNotServing, job)
		}
		return fmt.Errorf("save: %w", store.ErrNotServing)
	}
	return k.save(ctx, v)
}

// save writes v to the snapshot file atomically, after the database
// recorded it, and the stored spellings v learned from the log to the
// spellings table. Nothing is written beside a database that is no longer
// at its path (the host removing its folder, say): the writer checks the
// file at every transaction, and one runs before the temporary file is
// made (the spellings) and one before the rename (the record).
func (k *Keeper) save(ctx context.Context, v *gate.View) error {
	f, src := v.File, v.Src
	if !f.Acquire() {
		return fmt.Errorf("save snapshot: %w", store.ErrClosed)
	}
	defer f.Release()
	k.checkTarget(f, src)
	if err := k.targetErr(); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	gen := v.Mark().Gen // read before the copy: the copy covers at least this
	img, err := v.F.Image(ctx)
	if errors.Is(err, syncfilter.ErrClosed) {
		return fmt.Errorf("save snapshot: %w", store.ErrNotServing)
	}
	if err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	if err := f.St.NoteSpellings(ctx, src, v.Epoch, gen, v.AllSpellings()); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	h := snapshot.Header{Capacity: v.Capacity, Generation: gen, DatasetID: src.DatasetID, Created: k.db.Knobs.now().UTC()}
	record := func(sum [32]byte) error {
		return f.St.RecordSnapshot(ctx, src, v.Epoch, sum, gen, img.Params().M, k.cfg.Snapshot)
	}
	if err := snapshot.WriteFile(k.cfg.Snapshot, h, img, snapshot.WithKey(src.Key), snapshot.WithMode(k.cfg.SnapshotMode),
		snapshot.WithCommit(record), snapshot.WithProtected(fsafe.DatabaseFiles(f.St.Path.Real)...)); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	k.db.mu.Lock()
	k.mu.saved = max(k.mu.saved, gen)
	k.db.mu.Unlock()
	return nil
}

// checkTarget notes whether snapshots may be saved at the snapshot path
// (target.go); a refusal is noted, and nothing is saved there.
func (k *Keeper) checkTarget(f *gate.File, src *store.Source) {
	err := checkTarget(k.cfg.Snapshot, f.St.Path.Real, src.DatasetID, src.Row, k.cfg.ReplaceForeignFile)
	k.db.mu.Lock()
	changed := (err == nil) != (k.mu.targetErr == nil)
	k.mu.targetErr = err
	k.db.mu.Unlock()
	if err != nil && changed {
		k.info("snapshot path refused", slog.Any("why", err))
	}
}

// targetErr returns why snapshots may not be saved, or nil.
func (k *Keeper) targetErr() error {
	k.db.mu.Lock()
	defer k.db.mu.Unlock()
	return k.mu.targetErr
}
