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
	s := &scanning{k: k, f: c.F, src: src, lease: l, rep: rep, prev: k.G.Held(), auto: why.auto,
		batches: make(chan []string, 4), built: make(chan builderResult, 1)}
	defer s.stop()
	counts, err := c.F.St.Scan(ctx, src, store.ScanHooks{
		Begin: func(h store.Head, estimate int64) error { return s.begin(ctx, h, estimate) },
		Keys:  func(keys []string) error { return s.keys(ctx, keys) },
	})
	if !s.began {
		return nil, nil, err
	}
	res := s.stop()
	if err == nil {
		err = res.err
	}
	if err != nil {
		return nil, nil, err
	}
	rep.update(s.done, s.done)
	k.G.C.Skipped.Add(uint64(counts.Long))
	k.db.mu.Lock()
	k.mu.scan = ScanCounts{Rows: res.rows, Keys: s.done - s.invalid, SkippedText: s.invalid + counts.Long, SkippedNull: counts.Nulls, SkippedBlob: counts.Blobs}
	k.db.mu.Unlock()
	filter, err := syncfilter.ThawOn(k.db.Writer, res.b.Image())
	if err != nil {
		return nil, nil, err
	}
	v := gate.NewView(filter, c.F, src, s.head.Epoch, gate.Mark{Gen: s.head.Seq, Tag: s.head.Tag})
	v.Capacity, v.Rows = res.capacity, res.rows
	v.AddSpellings(s.pending)
	return v, s.pending, nil
}

// scanning is one scan in progress: what it read so far, and its builder.
type scanning struct {
	k       *Keeper
	f       *gate.File
	src     *store.Source
	lease   *store.Lease
	rep     *reporter
	prev    *gate.View // the view the new one replaces, for sizing
	auto    bool
	head    store.Head
	total   int64 // rows, estimated (the largest rowid), for Progress
	done    int64 // keys read
	shown   int64 // keys read at the last Progress
	invalid int64
	pending [][2]string // stored spellings not written yet: canonical, stored
	nextTry int         // pending's length at which they are written (0: batchSpellings)
	batches chan []string
	built   chan builderResult
	began   bool
	res     *builderResult
}

func (s *scanning) begin(ctx context.Context, h store.Head, estimate int64) error {
	if hook := s.k.db.Knobs.ScanRow; hook != nil {
		if err := hook(0); err != nil {
			return fmt.Errorf("scan source: %w", err)
		}
	}
	s.head, s.began, s.total = h, true, estimate
	go s.k.builder(ctx, s.f, s.src, s.batches, s.built, func(rows int64) uint64 { return s.k.sizeFor(rows, s.prev, s.auto) })
	return nil
}

// keys takes one chunk the scan read: canonical forms to the builder,
// stored spellings to the spellings table in batches, the lease renewed,
// Progress told.
func (s *scanning) keys(ctx context.Context, keys []string) error {
	k := s.k
	if k.life.Closing() {
		return store.ErrClosed // the filter would never serve
	}
	if err := context.Cause(ctx); err != nil {
		return err
	}
	batch := make([]string, 0, len(keys))
	for _, key := range keys {
		canon, err := k.G.CanonicalStored(key)
		if err != nil {
			s.invalid++
			k.G.C.Skipped.Add(1)
			continue
		}
		if canon != key {
			s.pending = append(s.pending, [2]string{canon, key})
		}
		batch = append(batch, canon)
	}
	s.done += int64(len(keys))
	if hook := k.db.Knobs.ScanRow; hook != nil {
		if err := hook(s.done); err != nil {
			return fmt.Errorf("scan source: %w", err)
		}
	}
	select {
	case s.batches <- batch:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	if err := s.f.St.RenewLease(ctx, s.src, s.lease); err != nil {
		return err
	}
	if len(s.pending) >= max(s.nextTry, batchSpellings) {
		err := s.f.St.AddSpellings(ctx, s.src, s.head.Epoch, s.pending)
		switch {
		case err == nil:
			s.pending, s.nextTry = s.pending[:0], 0
		case store.LockHeld(err) && len(s.pending) < 16*batchSpellings:
			// The app held the write lock past the busy timeout: the next
			// batch's worth, or the scan's record, writes them.
			s.nextTry = len(s.pending) + batchSpellings
		default:
			return err
		}
	}
	if s.done-s.shown >= k.cfg.ProgressEvery {
		s.shown = s.done
		s.rep.update(s.done, max(s.total, s.done))
	}
	return nil
}

// stop ends the builder, once, and returns its result.
func (s *scanning) stop() builderResult {
	if !s.began {
		return builderResult{}
	}
	if s.res == nil {
		close(s.batches)
		r := <-s.built
		s.res = &r
	}
	return *s.res
}

type builderResult struct {
	b        *syncfilter.Builder
	capacity uint64
	rows     int64
	err      error
}

// builder counts the source's rows on a connection of its own, sizes the
// filter from them (positions keyed by the source's key), then hashes every batch the scan sends into it (plain
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
			p.Key = src.Key // the database's: its snapshots hold only its id
			p.Compare = k.G.Compare()
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
