package gate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// Config is one collection's source and what the gate asks of the
// background.
type Config struct {
	Table, Column  string // "" and "": the library's own table
	Version        string // the version column; "" for none
	AllowUnindexed bool
	ReadOnly       bool
	Compare        syncfilter.Compare // which ids are one key
	Knobs          Knobs

	// Repair is called when no filter can serve (dropped, the triggers
	// lost) and a rebuild would mend it; Behind when a view lags the log
	// by more than a call reads. Neither may block.
	Repair func(why error)
	Behind func()
	Log    *slog.Logger // nil: none
}

// Knobs are what tests and the ablation benchmark switch (zero: production).
type Knobs struct {
	NoAppPool    bool             // confirmations never run on the app's pool
	NoLookup     bool             // Fetched of a key with one spelling probes as a page does
	NoPrepare    bool             // Open prepares no probe on the app's pool
	NoCatalog    bool             // every schema change resolves the source again
	NoWalk       bool             // unknown spellings are read from the table, never walked
	Behind       bool             // calls never take log entries in
	Inline       bool             // calls take every log entry they lack
	AfterProbe   func()           // a call's probe of keys returned
	SpellScan    func()           // a read of the table's stored spellings starts
	CatchUpChunk func()           // after every chunk a catch-up reads
	CatalogRead  func(onApp bool) // appended read the catalog, on the app's pool or a reader
	Walk         func()           // a call lists every spelling of its keys (walk.ok)
}

// Gate answers, for one collection, which keys the source holds: from a
// view's filter when it covers the source, confirming its maybes in
// SQLite, and from SQLite alone otherwise.
type Gate struct {
	ID    uint64 // names the gate's notes on reading connections
	cfg   Config
	files *Files

	mu     sync.Mutex              // owner of the state: every transition (state.go); held only to swap it
	state  atomic.Pointer[state]   // stored under mu, read lock-free; never nil
	bound  atomic.Pointer[binding] // the source as last resolved
	spTurn chan struct{}           // capacity 1: one build of a view of stored spellings at a time
	hasSp  atomic.Bool             // the spellings table had a row at the last read of the head (a probe, or a spellings view's build)

	C Counters
}

// want is the source the gate's configuration names.
func (g *Gate) want() store.Want {
	return store.Want{Table: g.cfg.Table, Column: g.cfg.Column, Version: g.cfg.Version, Policy: g.cfg.Compare.Policy(), AllowUnindexed: g.cfg.AllowUnindexed}
}

// New returns the gate of one collection, in bypass.
func New(files *Files, cfg Config) *Gate {
	g := &Gate{ID: NewID(), cfg: cfg, files: files, spTurn: make(chan struct{}, 1)}
	g.state.Store(&state{mode: Bypass})
	return g
}

// Counters are the gate's measures (Stats). Every key asked lands in
// exactly one of Avoided, Confirmed, FalsePos and Bypassed.
type Counters struct {
	Avoided, Confirmed, FalsePos, Bypassed atomic.Uint64
	CaughtUp, Skipped, Dropped             atomic.Uint64 // log entries taken in; stored keys no query can name; views dropped
	Queries, Invalid                       atomic.Uint64 // keys asked about; keys that could not be compared
}

// What answered a key, for the counters.
const (
	byFilter = iota // the filter ruled it out
	byMaybe         // a maybe SQLite confirmed or refuted
	bySQLite        // SQLite alone
)

func (g *Gate) count(by []uint8, found []bool) {
	var n [4]uint64
	for i, b := range by {
		switch {
		case b == byFilter:
			n[0]++
		case b == byMaybe && found[i]:
			n[1]++
		case b == byMaybe:
			n[2]++
		default:
			n[3]++
		}
	}
	g.C.Avoided.Add(n[0])
	g.C.Confirmed.Add(n[1])
	g.C.FalsePos.Add(n[2])
	g.C.Bypassed.Add(n[3])
}

// binding is the source as resolved in one file at one schema cookie.
// err is set when answers about it cannot be exact (the table is gone,
// its column no longer exact or indexed): calls return it until the
// schema changes again.
type binding struct {
	id       uint64
	f        *File
	schema   int64
	src      *store.Source
	err      error
	detached bool          // the source had its row in this file and lost it (Detach): never attached again by the gate
	cat      store.Catalog // what the resolution rested on
}

// Binding returns the source as last resolved, or nil.
func (g *Gate) Binding() *store.Source {
	if b := g.bound.Load(); b != nil {
		return b.src
	}
	return nil
}

// Call is one consistent read of the collection: the file now at the
// path (referenced while the call uses it), the source as resolved in
// it, and a reading connection taken at first need.
type Call struct {
	g      *Gate
	F      *File
	b      *binding
	conn   *store.Conn
	pr     store.Probe
	forApp bool // an app's call (LookForApp), which the app waits for: it may read the catalog on the app's pool
}

// Src is the source as the call resolved it.
func (c *Call) Src() *store.Source { return c.b.src }

// errStale is a view of the database that turned out to be out of date
// (the schema changed, a view no longer covers the source): start over.
var errStale = errors.New("view out of date")

// retries bounds how often a call starts over because the database
// changed under it: a schema changing as fast as a call reads it is
// refused rather than chased.
const retries = 16

func retry[T any](try func() (T, error)) (T, error) {
	for range retries {
		v, err := try()
		if !errors.Is(err, errStale) && !errors.Is(err, syncfilter.ErrClosed) {
			return v, err
		}
	}
	var zero T
	return zero, errors.New("the database keeps changing under the call (schema or attachment)")
}

// Look starts a call: the file now at the path and the source as
// resolved there (again, if the file is new or the schema changed since
// a resolution that failed). End it with End.
func (g *Gate) Look(ctx context.Context) (_ *Call, err error) {
	f, err := g.files.Get(ctx)
	if err != nil {
		return nil, err
	}
	c := &Call{g: g, F: f}
	defer func() {
		if err != nil {
			err = f.Explain(err)
			c.End()
		}
	}()
	if b := g.bound.Load(); b != nil && b.f == f {
		c.b = b
	} else if err = c.rebind(ctx); err != nil && !errors.Is(err, errStale) {
		return nil, err
	}
	if c.b.err != nil {
		if schema, err := c.schema(ctx); err != nil {
			return nil, err
		} else if schema != c.b.schema {
			if err := c.rebind(ctx); err != nil && !errors.Is(err, errStale) {
				return nil, err
			}
		}
		if c.b.err != nil {
			return nil, c.b.err
		}
	}
	c.dropOlder()
	return c, nil
}

// LookForApp is Look for a call the app makes and waits for (Index's
// methods): after DDL it may read the catalog on the app's pool. The
// follower and the jobs, which work while the app runs its own
// statements, use Look.
func (g *Gate) LookForApp(ctx context.Context) (*Call, error) {
	c, err := g.Look(ctx)
	if err == nil {
		c.forApp = true
	}
	return c, err
}

// Reader returns the call's reading connection, taking one at first need.
func (c *Call) Reader(ctx context.Context) (*store.Conn, error) {
	if c.conn == nil {
		conn, err := c.F.St.Reader(ctx)
		if err != nil {
			return nil, err
		}
		c.conn = conn
	}
	return c.conn, nil
}

// PutReader gives the reading connection back, before work that takes
// connections of its own.
func (c *Call) PutReader() {
	if c.conn != nil {
		c.F.St.Release(c.conn)
		c.conn = nil
	}
}

// End releases the call's connection and file.
func (c *Call) End() {
	c.PutReader()
	c.F.Release()
}

func (c *Call) schema(ctx context.Context) (int64, error) {
	conn, err := c.Reader(ctx)
	if err != nil {
		return 0, err
	}
	return conn.Schema(ctx)
}

// Empty reports whether the source's table has no row.
func (c *Call) Empty(ctx context.Context) (bool, error) {
	conn, err := c.Reader(ctx)
	if err != nil {
		return false, err
	}
	return conn.Empty(ctx, c.b.src)
}

// rebind resolves the source in the call's file, as the schema is now,
// and reports errStale when the binding changed (or its error). Resolving
// only reads: concurrent resolutions agree, and the newest file's is kept.
// A source whose triggers are not in place asks for repair, unless it
// was detached (its row gone): then SQLite answers until it is opened
// again.
func (c *Call) rebind(ctx context.Context) error {
	g := c.g
	for range retries {
		id := NewID() // before the read: a resolution begun later is newer
		if ok, err := c.appended(ctx, id); ok || err != nil {
			return err
		}
		schema, err := c.schema(ctx)
		if err != nil {
			return err
		}
		src, err := store.Resolve(ctx, c.conn, g.want())
		// DDL committed while resolving may have shown a schema half old,
		// half new: the cookie read again with the catalog tells.
		cat, cerr := c.conn.Catalog(ctx, src)
		if cerr == nil && cat.Schema != schema {
			continue
		}
		b := &binding{id: id, f: c.F, schema: schema, src: src, cat: cat}
		if err != nil {
			if !errors.Is(err, store.ErrNoSource) && !errors.Is(err, store.ErrInexactColumn) && !errors.Is(err, store.ErrNotIndexed) {
				return err // not about the source: try again next call
			}
			b.err = err
			if prev := g.bound.Load(); prev != nil && prev.err == nil {
				b.err = fmt.Errorf("the source changed: %w", err)
			}
		}
		if prev := g.bound.Load(); prev != nil && prev.f == b.f && (src == nil || !src.Row) {
			b.detached = prev.detached || prev.src != nil && prev.src.Row
		}
		g.keep(b)
		c.b = b
		if b.err == nil && !src.Logged && !g.cfg.ReadOnly && !src.OwnMissing {
			if b.detached {
				// Detached: answered from SQLite until opened again.
			} else if g.cfg.Repair != nil {
				g.cfg.Repair(errors.New("the source's triggers are not in place (a migration, or a new database file)"))
			}
		}
		if b.err != nil {
			return b.err
		}
		return errStale
	}
	return errors.New("the schema keeps changing under the call")
}

// appended binds a logged source as last resolved again, at the new
// schema cookie, when the catalog it rested on changed at most by columns
// appended to the table (ALTER TABLE … ADD COLUMN): one statement instead
// of a resolution's ten (errStale, the caller answers again).
func (c *Call) appended(ctx context.Context, id uint64) (bool, error) {
	prev := c.g.bound.Load()
	if prev == nil || prev.f != c.F || prev.err != nil || prev.src == nil || !prev.src.Logged || prev.src.VersionErr != nil || c.g.cfg.Knobs.NoCatalog {
		return false, nil
	}
	cat, err := c.catalog(ctx, prev.src)
	if err != nil {
		return false, err
	}
	if cat == nil || !cat.Appended(prev.cat) {
		return false, nil // a catalog that cannot be read (the sources table gone) resolves again
	}
	b := &binding{id: id, f: c.F, schema: cat.Schema, src: prev.src, cat: *cat, detached: prev.detached}
	c.g.keep(b)
	c.b = b
	return true, errStale
}

// catalog reads src's catalog for appended: an app's call on the app's
// pool when it may, as the connection its probe just ran on has parsed
// the new schema where a reader parses it again first (docs/BENCHMARKS.md,
// the page after ADD COLUMN); the follower and the jobs on a reader. They
// never take a connection of the app's: they work while the app runs its
// own statements, which would then run on the app's other connection,
// and SQLite checks the column names of an ALTER TABLE against the
// connection's schema as last read, before it checks the cookie (DDL the
// app runs there fails: "no such column", "duplicate column name"). Any
// error on the app's pool reads on the reader; nil: the catalog cannot be
// read there either (the sources table gone), and the source resolves
// again.
func (c *Call) catalog(ctx context.Context, src *store.Source) (*store.Catalog, error) {
	if c.forApp && c.appPool() && c.F.St.AppFree() {
		c.PutReader() // one connection at a time (ARCHITECTURE.md, the lock order)
		if cat, ok, err := c.F.St.AppCatalog(ctx, src); ok && err == nil {
			c.catalogRead(true)
			return &cat, nil
		}
	}
	conn, err := c.Reader(ctx)
	if err != nil {
		return nil, err
	}
	cat, err := conn.Catalog(ctx, src)
	if err != nil {
		return nil, nil
	}
	c.catalogRead(false)
	return &cat, nil
}

func (c *Call) catalogRead(onApp bool) {
	if f := c.g.cfg.Knobs.CatalogRead; f != nil {
		f(onApp)
	}
}

// keep makes b the gate's binding unless a newer file's, or one resolved
// later in the same file, is kept; it returns the one it replaced.
func (g *Gate) keep(b *binding) (old *binding) {
	for {
		old = g.bound.Load()
		if old != nil && (old.f.N > b.f.N || old.f == b.f && old.id > b.id) {
			return old
		}
		if g.bound.CompareAndSwap(old, b) {
			return old
		}
	}
}

// newest takes the gate's binding in place of the call's if it is a newer
// one of the same file (resolved by another call, or an attach).
func (c *Call) newest() error {
	if b := c.g.bound.Load(); b != nil && b.f == c.F && b.id > c.b.id {
		c.b = b
	}
	return c.b.err
}

// Detached reports whether the gate's binding is of a source that lost
// its row (Detach): only an open attaches it again.
func (g *Gate) Detached() bool {
	b := g.bound.Load()
	return b != nil && b.detached
}

// Detached reports whether the source lost its row in this file since
// the gate saw it attached (Detach): only an open attaches it again.
func (c *Call) Detached() bool { return c.b.detached }

// Rebind binds the source the caller just attached.
func (c *Call) Rebind(src *store.Source) {
	b := &binding{id: NewID(), f: c.F, schema: c.b.schema, src: src}
	c.g.keep(b)
	c.b = b
}

// Fresh resolves the source again if the schema changed since the call's
// binding (before work that must not act on a stale view, a rebuild).
func (c *Call) Fresh(ctx context.Context) error {
	schema, err := c.schema(ctx)
	if err != nil || schema == c.b.schema {
		return err
	}
	if err := c.rebind(ctx); err != nil && !errors.Is(err, errStale) {
		return err
	}
	return c.b.err
}

// orMoved returns err, or, when a statement failed because DDL committed
// since the call's binding, errStale (or why the source can no longer be
// answered for). A lock another connection holds is returned as it is:
// reading the schema would wait for the same lock again.
func (c *Call) orMoved(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, errStale) || ctx.Err() != nil || store.LockHeld(err) {
		return err
	}
	if schema, e := c.schema(ctx); e != nil || schema == c.b.schema {
		return err
	}
	return c.rebind(ctx)
}

// Attach attaches the source (its log, its triggers) in the call's file
// and binds the call to it.
func (c *Call) Attach(ctx context.Context) (store.AttachInfo, error) {
	src, info, err := c.F.St.Attach(ctx, c.g.want())
	if err != nil {
		return info, err
	}
	c.Rebind(src)
	return info, nil
}

// Name is the source's table as configured (the library's own, if none).
func (g *Gate) Name() string {
	if g.cfg.Table == "" {
		return store.OwnTable
	}
	return g.cfg.Table
}

// Names returns the source's table and column as configured ("" and ""
// for the library's own table).
func (g *Gate) Names() (table, column string) { return g.cfg.Table, g.cfg.Column }
