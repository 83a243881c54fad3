package upkeep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/gate"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/rebuild/internal/work"
)

// Config is one collection's snapshot and rebuild settings, defaults
// filled in (rebuild.Source).
type Config struct {
	Snapshot           string
	FPR                float64
	Capacity           uint64
	Headroom           float64
	LogRetain          uint64
	SnapshotMode       os.FileMode
	ReplaceForeignFile bool
	NoSaveOnClose      bool
	NoAutoRebuild      bool          // rebuild only when the app asks
	NotWhenDue         bool          // rebuild when no filter serves, not because the filter filled up
	RebuildFactor      float64       // due when the estimated false-positive rate exceeds FPR × this
	RebuildEvery       time.Duration // the least time between two automatic rebuilds
	Progress           func(done, total int64)
	ProgressEvery      int64
}

// Keeper is the background side of one collection: its jobs on the
// database's worker, its snapshot, its automatic rebuilds. Its mu fields
// are guarded by the database's DB.mu.
type Keeper struct {
	G    *gate.Gate
	db   *DB
	cfg  Config
	log  *slog.Logger // the database's, the collection named; nil: none
	life work.Life    // the index's calls and jobs, for Close
	ctx  context.Context
	stop context.CancelFunc

	mu struct {
		queued     [kinds]*job
		running    *job           // the job of the index the worker runs
		pending    int            // jobs queued or running, and a load asked after the first call
		idle       chan struct{}  // closed when pending drops to 0
		deferred   [kinds]*reason // jobs waiting for the end of the next call: the opening load, a repair
		opening    bool           // Open reads the source: it asks for what the index needs
		attach     bool           // the source lacks its triggers: the follower attaches it between calls
		lastErr    error          // why no filter serves: the last rebuild's or load's error
		snapErr    error          // why the snapshot was not used
		autos      uint64         // automatic rebuilds asked for
		autoWhy    string
		reattached uint64        // attaches after the source's triggers were lost
		saved      uint64        // generation of the last snapshot saved or loaded
		targetErr  error         // why snapshots may not be saved at the path
		created    *store.Source // attached by this index's open, not scanned yet
		retryAt    time.Time     // when a failed background rebuild is tried again (zero: none)
		retryWait  time.Duration
		autoLast   time.Time     // when the last automatic rebuild was asked for
		autoTook   time.Duration // how long the last automatic rebuild's scan took
		autoEnded  time.Time
		due        uint64 // the view judged due, whose rebuild waits for the spacing
		judged     fill   // the view whose fill was last judged, and its bits set then
		rebuilds   uint64
		lastBuilt  time.Time
		scan       ScanCounts
	}
}

// NewKeeper registers a collection of the database: its gate is made
// with gcfg, its Repair and Behind wired to the keeper.
func (db *DB) NewKeeper(cfg Config, gcfg gate.Config) (*Keeper, error) {
	k := &Keeper{db: db, cfg: cfg}
	k.ctx, k.stop = context.WithCancel(db.ctx)
	gcfg.Repair, gcfg.Behind = k.repairAfterCall, func() { db.ask(kindCatchUp, k, reason{}) }
	if db.Log != nil {
		table := gcfg.Table
		if table == "" {
			table = store.OwnTable
		}
		k.log = db.Log.With(slog.String("table", table))
		gcfg.Log = k.log
	}
	k.G = gate.New(db.Files, gcfg)
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.mu.closing {
		return nil, store.ErrClosed
	}
	db.mu.keepers[k] = struct{}{}
	return k, nil
}

// Life is the index's work in progress, which the app's calls enter.
func (k *Keeper) Life() *work.Life { return &k.life }

// reason is why a rebuild runs.
type reason struct {
	text     string
	auto     bool // the filter filled up: sized for growth, spaced by cost
	deferred bool // a repair that waited for a call: not for a source detached since
}

func (k *Keeper) info(msg string, args ...any) {
	if k.log != nil {
		k.log.Info(msg, args...)
	}
}

// askRepair asks for a rebuild because no filter can serve, unless the
// app rebuilds by itself.
func (k *Keeper) askRepair(why error) { k.repair(why, true) }

// repairAfterCall is askRepair after the end of the next call (or in a
// Wait), for what a rebind or a dropped filter asks: the triggers gone
// with the app's table, the file replaced, a log the filter cannot catch
// up from. The page that follows such a moment is answered from SQLite
// without sharing the machine with the attach and the scan; and the
// attach's DDL would make the app's connections parse the schema again
// and drop their page caches under that page (-bench AfterTableRebuild).
// A rebuild queued or running, or a Wait waiting, takes the repair at
// once, as askRepair does.
func (k *Keeper) repairAfterCall(why error) { k.repair(why, false) }

// repair notes why no filter serves and asks for a rebuild, at once or
// (later) after the next call, unless the app rebuilds by itself, the
// index opens (Open asks for what it needs), is read-only or closes.
func (k *Keeper) repair(why error, atOnce bool) {
	k.db.mu.Lock()
	k.mu.lastErr = why
	skip := k.mu.opening || k.cfg.NoAutoRebuild || k.db.ReadOnly || k.ctx.Err() != nil
	now := atOnce || k.db.Knobs.NoDeferredRepair || k.mu.queued[kindRebuild] != nil ||
		k.mu.running != nil && k.mu.running.kind == kindRebuild || k.mu.idle != nil
	if !skip && !now {
		k.deferLocked(kindRebuild, reason{text: why.Error()})
	}
	k.db.mu.Unlock()
	if !skip && now {
		k.AskRebuild(why.Error())
	}
}

// askFirstScan asks for the attach and first scan of a table the library
// never attached (or never scanned), after the next call (at once with
// NoDeferredRepair): the attach is DDL, which would make the app's
// connections parse the schema again under that call, and the scan would
// share the machine with it. (An attached table whose snapshot is
// missing is rebuilt at once: no DDL.)
func (k *Keeper) askFirstScan() {
	const why = "first scan"
	if k.db.Knobs.NoDeferredRepair {
		k.AskRebuild(why)
		return
	}
	k.db.mu.Lock()
	k.deferLocked(kindRebuild, reason{text: why})
	k.db.mu.Unlock()
}

// deferLocked makes a job of kind wait for the end of the next call,
// counted pending (Wait starts it).
func (k *Keeper) deferLocked(kd kind, why reason) {
	if k.mu.deferred[kd] == nil {
		k.mu.pending++
	}
	k.mu.deferred[kd] = &why
}

// AskRebuild asks for a rebuild in the background, and for the source's
// attach between calls, before the rebuild's turn:
// until the log holds the app's writes, a page that may name a stored
// spelling reads them again at each commit.
func (k *Keeper) AskRebuild(why string) { k.askRebuild(reason{text: why}) }

func (k *Keeper) askRebuild(why reason) {
	if !k.db.ReadOnly {
		k.db.mu.Lock()
		k.mu.attach = true
		k.db.mu.Unlock()
	}
	k.db.ask(kindRebuild, k, why)
}

// attachNow attaches the source if it was asked for and its triggers are
// still not in place: the follower's, between calls.
func (k *Keeper) attachNow(ctx context.Context) {
	k.db.mu.Lock()
	want := k.mu.attach
	k.mu.attach = false
	k.db.mu.Unlock()
	if !want {
		return
	}
	t, ok := k.life.Enter()
	if !ok {
		return
	}
	defer k.life.Leave(t)
	c, err := k.G.Look(ctx)
	if err != nil {
		return
	}
	defer c.End()
	if err := c.Fresh(ctx); err != nil || c.Src().Logged || c.Detached() {
		return
	}
	c.PutReader()
	if _, err := k.attach(ctx, c); err != nil {
		k.info("attach failed (the rebuild tries again)", slog.Any("err", err))
	}
}

// AskLoad asks for the opening load: once the first call is answered
// when the file is there (so that it does not share the machine with
// that call), at once when it is not (a rebuild follows, which takes
// long).
func (k *Keeper) AskLoad() {
	if _, err := os.Stat(k.cfg.Snapshot); err == nil && !k.db.Knobs.NoDeferredLoad {
		k.db.mu.Lock()
		k.deferLocked(kindLoad, reason{})
		k.db.mu.Unlock()
		return
	}
	k.db.ask(kindLoad, k, reason{})
}

// Called is what follows each of the app's calls: the opening load or
// the repair that waited for it, a retry that came due, the filter's fill
// judged, and the follower told.
func (k *Keeper) Called() {
	k.startAsked()
	k.checkDue()
	k.db.called(k)
}

// startAsked starts the jobs that waited for a call (the opening load, a
// repair), and a retry that came due.
func (k *Keeper) startAsked() {
	now := time.Now()
	db := k.db
	db.mu.Lock()
	deferred := k.mu.deferred
	k.mu.deferred = [kinds]*reason{}
	retry := !k.mu.retryAt.IsZero() && now.After(k.mu.retryAt)
	if retry {
		k.mu.retryAt = time.Time{}
	}
	db.mu.Unlock()
	if deferred[kindLoad] != nil {
		db.ask(kindLoad, k, reason{})
	}
	if why := deferred[kindRebuild]; why != nil && !k.G.Detached() { // a Detach since: only an open attaches again
		k.askRebuild(reason{text: why.text, deferred: true})
	}
	if retry {
		db.ask(kindRebuild, k, reason{text: "retry after a failed rebuild"})
	}
	db.mu.Lock()
	for _, why := range deferred { // counted by ask again, if it queued them: uncounted after, so that Wait never sees 0 between
		if why != nil {
			db.done(&job{k: k}, result{})
		}
	}
	db.mu.Unlock()
}

// catchUp is the follower's catch-up of k: its errors are the next
// call's to meet.
func (k *Keeper) catchUp(ctx context.Context) {
	if t, ok := k.life.Enter(); ok {
		if k.G.CatchUp(ctx) == nil {
			k.checkDue()
		}
		k.life.Leave(t)
	}
}

// Bounds of the wait before a failed background rebuild is tried again.
const (
	retryFirst = time.Second
	retryLast  = 5 * time.Minute
)

// rebuildFailed notes how a background rebuild ended: a failure that left
// no filter serving, and that another try may mend, is tried again at the
// first call after a wait that doubles with each failure.
func (k *Keeper) rebuildFailed(ctx context.Context, err error) {
	k.db.mu.Lock()
	defer k.db.mu.Unlock()
	if err == nil || k.G.Serving() != nil {
		k.mu.retryAt, k.mu.retryWait = time.Time{}, 0
		return
	}
	if interrupted(ctx) || k.ctx.Err() != nil || refusal(err) {
		return
	}
	first := retryFirst
	if k.db.Knobs.RetryFirst > 0 {
		first = k.db.Knobs.RetryFirst
	}
	k.mu.retryWait = min(retryLast, max(first, 2*k.mu.retryWait))
	k.mu.retryAt = time.Now().Add(k.mu.retryWait)
}

// refusal reports whether err says the source cannot be served as it is.
func refusal(err error) bool {
	for _, r := range []error{store.ErrInexactColumn, store.ErrNotIndexed, store.ErrNoSource, store.ErrBadConfig, store.ErrReadOnly, store.ErrClosed, store.ErrHardLinked} {
		if errors.Is(err, r) {
			return true
		}
	}
	return false
}

func (k *Keeper) setErr(err error) {
	k.db.mu.Lock()
	k.mu.lastErr = err
	k.db.mu.Unlock()
}

// Wait blocks until no job of the index is pending, then, if a filter
// serves, until it has taken every entry logged up to now; or returns why
// none serves (ErrNotServing).
func (k *Keeper) Wait(ctx context.Context) error {
	for {
		if k.life.Closing() {
			return store.ErrClosed
		}
		k.startAsked()
		k.db.mu.Lock()
		if k.mu.deferred != ([kinds]*reason{}) { // deferred since startAsked: start it
			k.db.mu.Unlock()
			continue
		}
		var ch chan struct{}
		if k.mu.pending > 0 {
			if k.mu.idle == nil {
				k.mu.idle = make(chan struct{})
			}
			ch = k.mu.idle
		}
		k.db.mu.Unlock()
		if ch != nil {
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-k.ctx.Done():
				return store.ErrClosed
			}
		}
		if k.G.Serving() == nil {
			break
		}
		t, ok := k.life.Enter()
		if !ok {
			return store.ErrClosed
		}
		err := k.G.CatchUp(ctx)
		k.life.Leave(t)
		if err != nil {
			return fmt.Errorf("wait: %w", err)
		}
		k.checkDue()
		if k.Upkeep() != "" { // the filter is due: Wait waits for its rebuild
			continue
		}
		if k.G.Serving() != nil {
			return nil
		}
	}
	if k.life.Closing() {
		return store.ErrClosed
	}
	if err := k.LastErr(); err != nil {
		return fmt.Errorf("wait: %w: %w", store.ErrNotServing, err)
	}
	if err := k.Counts().SnapErr; err != nil {
		return fmt.Errorf("wait: %w (%w)", store.ErrNotServing, err)
	}
	return fmt.Errorf("wait: %w", store.ErrNotServing)
}

// LastErr is why no filter serves, if one was noted.
func (k *Keeper) LastErr() error {
	k.db.mu.Lock()
	defer k.db.mu.Unlock()
	return k.mu.lastErr
}

// Upkeep names the jobs pending ("" when none).
func (k *Keeper) Upkeep() string {
	k.db.mu.Lock()
	defer k.db.mu.Unlock()
	out := ""
	for kd, j := range k.mu.queued {
		if j != nil || k.mu.deferred[kd] != nil || k.mu.running != nil && int(k.mu.running.kind) == kd {
			if out != "" {
				out += "+"
			}
			out += kindNames[kd]
		}
	}
	if out == "" && k.mu.pending > 0 {
		out = "running"
	}
	return out
}

// Counts are the keeper's measures.
type Counts struct {
	Rebuilds   uint64
	LastBuilt  time.Time
	Saved      uint64 // generation of the last snapshot saved or loaded
	Scan       ScanCounts
	Autos      uint64 // automatic rebuilds asked for, and why the last
	AutoWhy    string
	Reattached uint64
	SnapErr    error // why the snapshot was not used, or may not be saved
}

// Counts returns the keeper's measures.
func (k *Keeper) Counts() Counts {
	k.db.mu.Lock()
	defer k.db.mu.Unlock()
	return Counts{Rebuilds: k.mu.rebuilds, LastBuilt: k.mu.lastBuilt, Saved: k.mu.saved, Scan: k.mu.scan,
		Autos: k.mu.autos, AutoWhy: k.mu.autoWhy, Reattached: k.mu.reattached, SnapErr: errors.Join(k.mu.targetErr, k.mu.snapErr)}
}

// Close stops the index's background work and waits for it and for the
// calls in progress (ctx bounds the wait), then saves the filter if it
// covers more than the file and closes it; it returns the save's error.
// When ctx ends first, the rest finishes without the caller as the last
// call ends (a failed save is then only logged).
func (k *Keeper) Close(ctx context.Context) error {
	k.stop()
	k.db.mu.Lock()
	for _, j := range k.mu.queued {
		if j != nil {
			k.db.remove(j)
			k.db.done(j, result{err: store.ErrClosed})
		}
	}
	for kd, why := range k.mu.deferred {
		if why != nil {
			k.mu.deferred[kd] = nil
			k.db.done(&job{k: k}, result{})
		}
	}
	k.db.mu.Unlock()
	var saveErr error
	if err := k.life.Close(ctx, func() {
		saveErr = k.closeNow(context.WithoutCancel(ctx))
		k.db.forget(k)
	}); err != nil {
		return err
	}
	return saveErr // set: life.Close returned nil once the function above did
}

func (k *Keeper) closeNow(ctx context.Context) (err error) {
	v := k.G.Serving()
	// A path refused (a file not ours) is reported by Stats, not again here.
	if v != nil && k.cfg.Snapshot != "" && !k.cfg.NoSaveOnClose && !k.db.ReadOnly && !k.db.Paused() && v.Mark().Gen > k.Counts().Saved &&
		!errors.Is(k.targetErr(), store.ErrUnsafeTarget) {
		if err = k.save(ctx, v); err != nil {
			k.info("save on close failed", slog.Any("err", err))
			err = fmt.Errorf("close: %w", err)
		}
	}
	k.G.Close().Close()
	return err
}

// Due reports whether a filter at this estimated false-positive rate is
// due for a rebuild.
func (k *Keeper) Due(est float64) bool {
	return est > k.cfg.FPR*k.cfg.RebuildFactor
}

// FPR is the target false-positive rate.
func (k *Keeper) FPR() float64 { return k.cfg.FPR }

// DueWaiting reports whether the serving filter is due and its rebuild
// waits for the spacing.
func (k *Keeper) DueWaiting() bool {
	v := k.G.Serving()
	k.db.mu.Lock()
	defer k.db.mu.Unlock()
	return v != nil && k.mu.due == v.ID
}

// fill is a filter's bits set when its fill was judged.
type fill struct {
	view uint64
	ones uint64
}
