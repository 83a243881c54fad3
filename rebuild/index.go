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

// Index is the gate a sync engine asks "did I fetch this record?". It
// answers definitively: the filter's "absent" is final, every "maybe" is
// confirmed in SQLite. Every method is safe for concurrent use.
//
// What the index is doing is one state value (state.go): serving(F),
// bypass, rebuilding or closed. Queries load it without a lock; every
// transition is made in state.go under mu.
//
// The index owns its goroutines: the filter's writer (package syncfilter),
// a scan's builder while a rebuild runs, and at most one background
// rebuild, started only under mu and only before Close began (when a
// snapshot cannot be used at Open, or a filter had to be dropped). Close
// waits for all of them.
//
// Locks, each with one job, taken in this order:
//
//	lifeMu    public calls hold it shared for their whole duration, Close
//	          exclusively: the store is never closed under a call
//	rebuildMu one rebuild or reload at a time, held for its whole duration
//	mu        the owner of the state: every transition, every cover (so no
//	          key slips between a rebuild's replay and its publication),
//	          closing, and the start of background work
//	serving.mu, bypassLog.mu   catch-up of one filter, of one bypass
//
// The store's generation reader and the metrics have their own, innermost.
type Index struct {
	cfg Config
	st  *store

	lifeMu    sync.RWMutex
	rebuildMu sync.Mutex
	mu        sync.Mutex
	state     atomic.Pointer[state] // stored only under mu; never nil
	closing   bool                  // under mu: Close began, no background work starts

	ctx    context.Context    // of background work; cancelled by Close
	cancel context.CancelFunc //
	bg     sync.WaitGroup     // background rebuilds; added to only under mu
	ready  chan struct{}      // closed when the first rebuild or load attempt has ended
	once   sync.Once

	savedGen atomic.Uint64 // generation of the last snapshot this index saved or loaded
	updater  atomic.Int64  // id of the goroutine running Update's function, 0 if none
	lastAuto time.Time     // under mu: when the last automatic rebuild started

	m metrics
}

// newIndex returns an index in bypass over an open store.
func newIndex(cfg Config, st *store) *Index {
	ix := &Index{cfg: cfg, st: st, ready: make(chan struct{})}
	ix.ctx, ix.cancel = context.WithCancel(context.Background())
	ix.m.started = time.Now()
	ix.state.Store(&state{mode: modeBypass, log: newBypassLog(0)})
	return ix
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
	ix := newIndex(cfg, st)
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
		if err := ix.Rebuild(ctx); err != nil && ix.filter() == nil {
			ix.cancel()
			st.close()
			return nil, fmt.Errorf("open index: first scan: %w", err)
		}
		ix.markReady()
		return ix, nil
	}
	if cfg.Snapshot != "" {
		err = ix.loadSnapshot(ctx)
	} else {
		err = errors.New("no snapshot configured")
	}
	if err == nil {
		ix.markReady()
		return ix, nil
	}
	ix.m.setSnapshotError(err)
	if _, floor, herr := st.head(ctx); herr == nil {
		// Below the floor, a full scan noted every alias.
		ix.state.Store(&state{mode: modeBypass, log: newBypassLog(floor)})
	}
	if cfg.NoBackgroundRebuild {
		ix.markReady()
		return ix, nil
	}
	ix.mu.Lock()
	ix.startBackground()
	ix.mu.Unlock()
	return ix, nil
}

func (ix *Index) markReady() { ix.once.Do(func() { close(ix.ready) }) }

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
	if ix.get().mode == modeClosed {
		ix.lifeMu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (ix *Index) leave() { ix.lifeMu.RUnlock() }

// Close stops background work and waits for it, saves the filter if a
// snapshot file is configured and the filter covers more than the file
// does, and closes the database. Calls after Close return ErrClosed.
func (ix *Index) Close(ctx context.Context) error {
	if !ix.beginClose() {
		return nil
	}
	ix.cancel()
	ix.bg.Wait() // nothing starts any more: closing is set
	ix.lifeMu.Lock()
	defer ix.lifeMu.Unlock()
	var err error
	if s := ix.filter(); s != nil && ix.cfg.Snapshot != "" && !ix.cfg.NoSaveOnClose && s.gen.Load() > ix.savedGen.Load() {
		if err = ix.save(ctx, s); err != nil {
			err = fmt.Errorf("close index: %w", err)
		}
	}
	if s := ix.finishClose(); s != nil {
		_ = s.f.Close()
	}
	ix.st.close()
	return err
}

// testHookDrop, when set by tests, runs when a query has decided to drop
// its filter, before the drop.
var testHookDrop func()

// current returns the filter to trust, caught up with every key committed
// before the call, or nil in bypass; aliases says whether confirmations
// must look in the alias table (it had rows, or this process added some).
func (ix *Index) current(ctx context.Context) (_ *serving, aliases bool, err error) {
	v, err := ix.st.generation(ctx)
	if err != nil {
		return nil, false, err
	}
	head, floor := v.head, v.floor
	defer func() { aliases = v.aliases || ix.st.notedAliases.Load() }()
	for {
		st := ix.get()
		if st.mode != modeServing {
			return nil, false, ix.noteAliasesUpTo(ctx, st.log, head, floor)
		}
		s := st.filter
		if s.gen.Load() >= head {
			return s, false, nil
		}
		err := ix.catchUp(ctx, s, head, floor)
		switch {
		case err == nil:
			ix.checkDue(s)
			return s, false, nil
		case errors.Is(err, syncfilter.ErrClosed) && ix.get() != st:
			continue // replaced meanwhile: use the new one
		case errors.Is(err, ErrCannotCatchUp):
			// The log was compacted past this filter (by another
			// process's rebuild): stop trusting it and rebuild.
			ix.m.setError(err)
			if testHookDrop != nil {
				testHookDrop()
			}
			ix.drop(s)
			continue
		}
		return nil, false, err
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
func (ix *Index) noteAliasesUpTo(ctx context.Context, log *bypassLog, head, floor uint64) error {
	log.mu.Lock()
	defer log.mu.Unlock()
	from := max(log.gen, floor)
	if from >= head {
		return nil
	}
	if err := ix.readLog(ctx, from, head, nil); err != nil {
		return fmt.Errorf("note aliases: %w", err)
	}
	log.gen = head
	return nil
}
