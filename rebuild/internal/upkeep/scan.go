package upkeep

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/gate"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// ScanCounts are what one full scan of the source found.
type ScanCounts struct {
	Rows        int64 // rows of the table
	Keys        int64 // keys inserted into the filter
	SkippedText int64 // text ids no query can name: not valid UTF-8, or too long
	SkippedBlob int64 // ids stored as BLOB (never equal to a text id)
	SkippedNull int64 // rows whose id is NULL
}

// batchSpellings is how many stored spellings a scan gathers before it
// writes them to the spellings table.
const batchSpellings = 4096

// scan builds an unpublished view from a full read of the source: every
// row committed before the scan's head is read, everything later is in
// the log after it. A builder goroutine counts the rows (a bare count(*),
// which sizes the filter) and hashes the keys the scan reads, on the
// other core. The stored spellings that are not NFC go to the spellings
// table as the scan finds them; those found last are returned, for the
// record of the scan, and the view holds them too.
func (k *Keeper) scan(ctx context.Context, c *gate.Call, src *store.Source, l *store.Lease, why reason, rep *reporter) (_ *gate.View, pending [][2]string, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	rep.cancel = cancel // a Progress that panics stops the scan
	f := c.F
	var (
		head     store.Head
		total    int64 // rows, estimated (the largest rowid), for Progress
		done     int64
		shown    int64
		invalid  int64
		batches  = make(chan []string, 4)
		built    = make(chan builderResult, 1)
		began    bool
		prevView = k.G.Held()
	)
	defer func() {
		if began && batches != nil {
			close(batches)
			<-built
		}
	}()
	hook := k.db.Knobs.ScanRow
	hooks := store.ScanHooks{
		Begin: func(h store.Head, estimate int64) error {
			if hook != nil {
				if err := hook(0); err != nil {
					return fmt.Errorf("scan source: %w", err)
				}
			}
			head, began = h, true
			total = estimate
			go k.builder(ctx, f, src, batches, built, func(rows int64) uint64 { return k.sizeFor(rows, prevView, why.auto) })
			return nil
		},
		Keys: func(keys []string) error {
			if k.life.Closing() {
				return store.ErrClosed // the filter would never serve
			}
			if err := context.Cause(ctx); err != nil {
				return err
			}
			k.db.yield(ctx)
			batch := make([]string, 0, len(keys))
			for _, key := range keys {
				canon, err := gate.CanonicalStored(key)
				if err != nil {
					invalid++
					k.G.C.Skipped.Add(1)
					continue
				}
				if canon != key {
					pending = append(pending, [2]string{canon, key})
				}
				batch = append(batch, canon)
			}
			done += int64(len(keys))
			if hook != nil {
				if err := hook(done); err != nil {
					return fmt.Errorf("scan source: %w", err)
				}
			}
			select {
			case batches <- batch:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			if err := f.St.RenewLease(ctx, src, l); err != nil {
				return err
			}
			if len(pending) >= batchSpellings {
				if err := f.St.AddSpellings(ctx, src, head.Epoch, pending); err != nil {
					return err
				}
				pending = pending[:0]
			}
			if done-shown >= k.cfg.ProgressEvery {
				shown = done
				rep.update(done, max(total, done))
			}
			return nil
		},
	}
	counts, err := f.St.Scan(ctx, src, hooks)
	if !began {
		return nil, nil, err
	}
	close(batches)
	batches = nil
	res := <-built
	if err == nil {
		err = res.err
	}
	if err != nil {
		return nil, nil, err
	}
	rep.update(done, done)
	rows := res.rows
	k.G.C.Skipped.Add(uint64(counts.Long))
	k.db.mu.Lock()
	k.mu.scan = ScanCounts{Rows: rows, Keys: done - invalid, SkippedText: invalid + counts.Long, SkippedNull: counts.Nulls, SkippedBlob: counts.Blobs}
	k.db.mu.Unlock()
	filter, err := syncfilter.ThawOn(k.db.Writer, res.b.Image())
	if err != nil {
		return nil, nil, err
	}
	v := gate.NewView(filter, f, src, head.Epoch, gate.Mark{Gen: head.Seq, Tag: head.Tag}, true)
	v.Capacity, v.Rows = res.capacity, rows
	v.AddSpellings(pending)
	return v, pending, nil
}

type builderResult struct {
	b        *syncfilter.Builder
	capacity uint64
	rows     int64
	err      error
}

// builder counts the source's rows on a connection of its own, sizes the
// filter from them, then hashes every batch the scan sends into it (plain
// stores: nobody queries it yet); it sends its result once batches is
// closed. A count that fails fails the rebuild.
func (k *Keeper) builder(ctx context.Context, f *gate.File, src *store.Source, batches <-chan []string, built chan<- builderResult, sizeFor func(int64) uint64) {
	var r builderResult
	defer func() { built <- r }()
	if h := k.db.Knobs.BeforeCount; h != nil {
		r.err = h()
	}
	if r.err == nil {
		r.rows, r.err = f.St.CountAll(ctx, src)
	}
	if r.err == nil {
		r.capacity = sizeFor(r.rows)
		var p syncfilter.Params
		if p, r.err = syncfilter.NewParams(r.capacity, k.cfg.FPR); r.err == nil {
			r.b, r.err = syncfilter.NewBuilder(p)
		}
		if r.err != nil {
			r.err = fmt.Errorf("size filter for %d rows: %w", r.rows, r.err)
		}
	}
	for batch := range batches {
		if r.err == nil {
			r.err = r.b.AddBatch(batch)
		}
	}
}

// Automatic rebuilds are sized for rows × Headroom, or rows ×
// growthFactor when the filter they replace filled up within fastGrowth
// of being built (an initial sync, a bulk import: likely to grow as much
// again), and spaced by their own cost: the next may start once
// costSpacing times the last one's scan has passed (bypass at most a
// tenth of the time), and not before RebuildEvery.
const (
	fastGrowth   = 10 * time.Minute
	growthFactor = 8
	costSpacing  = 9
)

// sizeFor is the capacity a rebuild gives a filter for rows keys.
func (k *Keeper) sizeFor(rows int64, prev *gate.View, auto bool) uint64 {
	factor := k.cfg.Headroom
	if auto && prev != nil && prev.F != nil && time.Since(prev.Built) < fastGrowth {
		factor = max(factor, growthFactor)
	}
	return max(k.cfg.Capacity, uint64(math.Ceil(float64(rows)*factor)), 1024)
}

// checkDue asks for a rebuild when the serving filter's estimated
// false-positive rate exceeds FPR × RebuildFactor: a cheap test on its
// fill, then, at most once per 1/64 of the bits newly set, the estimate
// from a scan of its bits; the spacing may delay the rebuild.
func (k *Keeper) checkDue() {
	v := k.G.Serving()
	if v == nil || k.cfg.NoAutoRebuild || k.cfg.NotWhenDue || k.db.ReadOnly {
		return
	}
	now := k.db.Knobs.now()
	k.db.mu.Lock()
	due := k.mu.due == v.ID // judged due, and waiting for the spacing
	k.db.mu.Unlock()
	if !due {
		_, _, ones := v.F.Load()
		p := v.F.Params()
		limit := k.cfg.FPR * k.cfg.RebuildFactor
		// fill^k is the rate of an evenly loaded filter; blocks vary, so
		// the real rate is higher. Far below the limit, nothing to do.
		if math.Pow(float64(ones)/float64(p.M), float64(p.K)) < limit/4 {
			return
		}
		k.db.mu.Lock()
		judged := k.mu.judged
		if judged.view == v.ID && ones < judged.ones+p.M/64 {
			k.db.mu.Unlock()
			return // judged recently
		}
		k.mu.judged = fill{v.ID, ones}
		k.db.mu.Unlock()
		if est := v.F.Stats().EstimatedFPR; est <= limit {
			return
		}
	}
	k.db.mu.Lock()
	at := now
	if !k.mu.autoEnded.IsZero() {
		at = k.mu.autoEnded.Add(costSpacing * k.mu.autoTook)
	}
	if !k.mu.autoLast.IsZero() && k.mu.autoLast.Add(k.cfg.RebuildEvery).After(at) {
		at = k.mu.autoLast.Add(k.cfg.RebuildEvery)
	}
	if at.After(now) {
		k.mu.due = v.ID // asked for at the first call once the spacing allows
		k.db.mu.Unlock()
		return
	}
	why := fmt.Sprintf("estimated false-positive rate above %.3g%% (target %.3g%% × %g)", 100*k.cfg.FPR*k.cfg.RebuildFactor, 100*k.cfg.FPR, k.cfg.RebuildFactor)
	k.mu.due, k.mu.autoLast = 0, now
	k.mu.autos++
	k.mu.autoWhy = why
	k.db.mu.Unlock()
	k.info("filter due for a rebuild", "why", why)
	k.db.ask(kindRebuild, k, reason{text: why, auto: true})
}
