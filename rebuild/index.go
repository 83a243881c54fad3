package rebuild

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/syncfilter/syncfilter/syncfilter"
)

// serving is a published filter and how much of the log it covers.
type serving struct {
	f        *syncfilter.Filter
	capacity uint64        // keys the filter was sized for
	mu       sync.Mutex    // serializes catch-up of this filter
	gen      atomic.Uint64 // every log entry with seq <= gen is in f
}

// Index is the gate a sync engine asks "did I fetch this record?". It
// answers definitively: the filter's "absent" is final, every "maybe" is
// confirmed in SQLite.
//
// Open starts at most one background goroutine (a rebuild when the
// snapshot cannot be used); Close cancels it and waits. Every method is
// safe for concurrent use.
type Index struct {
	cfg Config
	st  *store

	cur atomic.Pointer[serving] // the published filter; nil: bypass, every query goes to SQLite

	// markMu orders covers against publication: Cover, MarkFetched and
	// Update hold it shared while they hand keys over; publishing and
	// unpublishing a filter hold it exclusively.
	markMu     sync.RWMutex
	pendMu     sync.Mutex
	pending    []string // keys covered while a rebuild runs unpublished; guarded by pendMu
	collecting bool     // a rebuild is collecting pending keys; guarded by pendMu

	rebuildMu sync.Mutex // one rebuild or reload at a time

	aliasMu  sync.Mutex // guards aliasGen
	aliasGen uint64     // in bypass: log entries up to here had their aliases noted

	savedGen atomic.Uint64 // generation of the last snapshot this index saved or loaded

	updater atomic.Int64 // id of the goroutine running Update's function, 0 if none

	lifeMu sync.RWMutex // public calls hold it shared; Close exclusively
	closed bool         // guarded by lifeMu
	ctx    context.Context
	cancel context.CancelFunc
	bg     sync.WaitGroup // background rebuilds
	ready  chan struct{}  // closed when the first rebuild or load attempt has ended
	once   sync.Once

	m metrics
}

// Open opens the database, attaches the source and makes the filter
// ready: from the snapshot if it checks out (then catching up on every
// key committed after it), otherwise by rebuilding.
//
// The first Open of a source scans it before returning (nothing could
// vouch for the rows already there). Later, a snapshot that is missing,
// damaged, foreign or stale is not an error: the index serves every query
// from SQLite and rebuilds in the background (see Config.NoBackgroundRebuild,
// Wait, Stats.SnapshotError).
func Open(ctx context.Context, cfg Config) (*Index, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	st, fresh, err := openStore(ctx, &cfg, cfg.targetCheck)
	if err != nil {
		return nil, err
	}
	ix := &Index{cfg: cfg, st: st, ready: make(chan struct{})}
	ix.ctx, ix.cancel = context.WithCancel(context.Background())
	ix.m.started = time.Now()
	if cfg.ReadOnly && (fresh || !st.attached) {
		// Nothing may be scanned into the database's record: answer from
		// SQLite alone (the aliases were read into memory).
		ix.m.setSnapshotError(errors.New("no complete record of this source in the database (attach it with a writable Open or `syncfilter rebuild`)"))
		ix.markReady()
		return ix, nil
	}
	if fresh {
		// A failure after the filter was published (saving the snapshot,
		// say) leaves a complete filter serving: keep it, the error is in
		// Stats.LastError. Without a filter, Open fails.
		if err := ix.Rebuild(ctx); err != nil && ix.cur.Load() == nil {
			ix.cancel()
			st.close()
			return nil, fmt.Errorf("open index: first scan: %w", err)
		}
		ix.markReady()
		return ix, nil
	}
	if cfg.Snapshot != "" {
		err = ix.load(ctx)
	} else {
		err = errors.New("no snapshot configured")
	}
	if err == nil {
		ix.markReady()
		return ix, nil
	}
	ix.m.setSnapshotError(err)
	if _, floor, herr := st.head(ctx); herr == nil {
		ix.aliasGen = floor // below the floor, a full scan noted every alias
	}
	if cfg.NoBackgroundRebuild {
		ix.markReady()
		return ix, nil
	}
	ix.rebuildInBackground()
	return ix, nil
}

func (ix *Index) markReady() { ix.once.Do(func() { close(ix.ready) }) }

// rebuildInBackground starts a rebuild on a goroutine owned by the index.
func (ix *Index) rebuildInBackground() {
	if ix.ctx.Err() != nil {
		return // closing
	}
	ix.bg.Add(1)
	go func() {
		defer ix.bg.Done()
		defer ix.markReady()
		_ = ix.Rebuild(ix.ctx) // the error is kept in the metrics
	}()
}

// Wait blocks until the index is past its opening rebuild or load, and
// returns the error of the last rebuild, if it failed.
func (ix *Index) Wait(ctx context.Context) error {
	select {
	case <-ix.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	return ix.m.lastRebuildError()
}

// enter and leave bracket every public call. A call from inside Update's
// function fails at once (it would wait for the connection Update holds).
func (ix *Index) enter() error {
	if u := ix.updater.Load(); u != 0 && u == goid() {
		return ErrNestedCall
	}
	ix.lifeMu.RLock()
	if ix.closed {
		ix.lifeMu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (ix *Index) leave() { ix.lifeMu.RUnlock() }

// Close stops background work, saves the filter if a snapshot file is
// configured and the filter covers more than the file does, and closes
// the database. Calls after Close return ErrClosed.
func (ix *Index) Close(ctx context.Context) error {
	ix.cancel()
	ix.bg.Wait()
	ix.lifeMu.Lock()
	defer ix.lifeMu.Unlock()
	if ix.closed {
		return nil
	}
	ix.closed = true
	var err error
	if s := ix.cur.Load(); s != nil && ix.cfg.Snapshot != "" && !ix.cfg.NoSaveOnClose && s.gen.Load() > ix.savedGen.Load() {
		if err = ix.save(ctx, s); err != nil {
			err = fmt.Errorf("close index: %w", err)
		}
	}
	if s := ix.cur.Swap(nil); s != nil {
		_ = s.f.Close()
	}
	ix.st.close()
	return err
}

// current returns the filter to trust, caught up with every key committed
// before the call, or nil in bypass.
func (ix *Index) current(ctx context.Context) (*serving, error) {
	head, floor, err := ix.st.head(ctx)
	if err != nil {
		return nil, err
	}
	for {
		s := ix.cur.Load()
		if s == nil {
			return nil, ix.noteAliasesUpTo(ctx, head, floor)
		}
		if s.gen.Load() >= head {
			return s, nil
		}
		err := ix.catchUp(ctx, s, head, floor)
		switch {
		case err == nil:
			return s, nil
		case errors.Is(err, syncfilter.ErrClosed) && ix.cur.Load() != s:
			continue // replaced meanwhile: use the new one
		case errors.Is(err, ErrCannotCatchUp):
			// The log was compacted past this filter (by another
			// process's rebuild): stop trusting it and rebuild.
			ix.m.setError(err)
			ix.dropFilter(s)
			continue
		}
		return nil, err
	}
}

// catchUp inserts the keys logged after s.gen up to head into s.
func (ix *Index) catchUp(ctx context.Context, s *serving, head, floor uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	gen := s.gen.Load()
	if gen >= head {
		return nil
	}
	if gen < floor {
		return fmt.Errorf("catch up from generation %d, log starts after %d: %w", gen, floor, ErrCannotCatchUp)
	}
	err := ix.readLog(ctx, gen, head, func(batch []string) error { return s.f.AddBatch(ctx, batch) })
	if err != nil {
		return fmt.Errorf("catch up: %w", err)
	}
	s.gen.Store(head)
	ix.m.caughtUp.Add(head - gen)
	return nil
}

// noteAliasesUpTo is catch-up in bypass: only the alias table needs the
// log, so that confirmations find non-NFC spellings.
func (ix *Index) noteAliasesUpTo(ctx context.Context, head, floor uint64) error {
	ix.aliasMu.Lock()
	defer ix.aliasMu.Unlock()
	from := max(ix.aliasGen, floor)
	if from >= head {
		return nil
	}
	if err := ix.readLog(ctx, from, head, nil); err != nil {
		return fmt.Errorf("note aliases: %w", err)
	}
	ix.aliasGen = head
	return nil
}

// dropFilter unpublishes s (if still published) and starts a rebuild.
func (ix *Index) dropFilter(s *serving) {
	ix.markMu.Lock()
	dropped := ix.cur.CompareAndSwap(s, nil)
	ix.markMu.Unlock()
	if dropped {
		ix.aliasMu.Lock()
		ix.aliasGen = s.gen.Load()
		ix.aliasMu.Unlock()
		if !ix.cfg.NoBackgroundRebuild {
			ix.rebuildInBackground()
		}
	}
}

// publish makes s the filter that answers, first giving it the keys
// covered while no filter was published and everything logged since its
// generation. markMu is held so no cover slips between.
func (ix *Index) publish(ctx context.Context, s *serving) error {
	if head, floor, err := ix.st.head(ctx); err != nil {
		return err
	} else if err := ix.catchUp(ctx, s, head, floor); err != nil { // the bulk, without blocking covers
		return err
	}
	ix.markMu.Lock()
	defer ix.markMu.Unlock()
	if err := s.f.AddBatch(ctx, ix.takePending(false)); err != nil {
		return fmt.Errorf("replay covered keys: %w", err)
	}
	head, floor, err := ix.st.head(ctx)
	if err != nil {
		return err
	}
	if err := ix.catchUp(ctx, s, head, floor); err != nil {
		return err
	}
	ix.cur.Store(s)
	return nil
}

// unpublish enters bypass and starts collecting covered keys for the
// filter being built; it returns the filter that was serving.
func (ix *Index) unpublish() *serving {
	ix.markMu.Lock()
	defer ix.markMu.Unlock()
	ix.takePending(true)
	prev := ix.cur.Swap(nil)
	if prev != nil {
		ix.aliasMu.Lock()
		ix.aliasGen = max(ix.aliasGen, prev.gen.Load())
		ix.aliasMu.Unlock()
	}
	return prev
}

// restore puts prev back after a failed rebuild, with the keys covered
// meanwhile; with no previous filter the index stays in bypass.
func (ix *Index) restore(ctx context.Context, prev *serving) {
	ix.markMu.Lock()
	defer ix.markMu.Unlock()
	pending := ix.takePending(false)
	if prev == nil {
		return
	}
	if err := prev.f.AddBatch(context.WithoutCancel(ctx), pending); err != nil {
		_ = prev.f.Close() // cannot vouch for it: stay in bypass
		return
	}
	ix.cur.Store(prev)
}

// takePending returns the keys covered so far and empties the queue;
// collect says whether covers go on queueing (a rebuild starts) or not.
func (ix *Index) takePending(collect bool) []string {
	ix.pendMu.Lock()
	defer ix.pendMu.Unlock()
	pending := ix.pending
	ix.pending, ix.collecting = nil, collect
	return pending
}
