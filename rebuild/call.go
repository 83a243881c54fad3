package rebuild

import (
	"context"
	"errors"
	"fmt"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// call is one public call's consistent read of its collection: the
// database file now at the path (a reference: the file stays open while
// the call uses it), the source as resolved in that file, a reading
// connection taken at first need, and, once probed, the log's head, the
// filter it trusts (caught up to that head; nil: SQLite answers every
// key) and the stored spellings, current to that head.
type call struct {
	ix   *Index
	f    *file
	b    *binding
	conn *store.Conn
	h    store.Head // logged sources, from the last probe
	s    *serving   // the filter the answer trusts, or nil
	sp   *spellingSet
	pr   store.Probe // the last probe's result (its slices reused)
}

// binding is the source as resolved in one file at one schema cookie.
// err is set when answers about it cannot be exact (the table is gone,
// its key column is no longer exact or indexed): every call returns it
// until the schema changes again.
type binding struct {
	id       uint64
	f        *file
	schema   int64 // the cookie read before resolving
	src      *store.Source
	detached bool // the source lost its row since the last binding: Detach ran
	err      error
}

// errStale is a probe that found the call's view out of date (the schema
// changed, the filter no longer covers the source): the caller starts
// over.
var errStale = errors.New("view out of date")

// retries bounds how often a call starts over because the database
// changed under it (errStale): a schema changing as fast as a call can
// read it is refused rather than chased.
const retries = 16

// retry runs try until it returns something other than errStale (or the
// filter it used closed under it), at most retries times.
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

// look takes the file now at the path and the source as last resolved
// there (resolving it if the file is new to the index). A source that
// could not be answered for is resolved again once the schema changed;
// until then its error is returned.
func (ix *Index) look(ctx context.Context) (_ *call, err error) {
	f, err := ix.db.file(ctx)
	if err != nil {
		return nil, err
	}
	c := &call{ix: ix, f: f}
	defer func() {
		if err != nil {
			err = f.explain(err)
			c.end()
		}
	}()
	bind := func() (*binding, error) { return retry(func() (*binding, error) { return ix.bind(ctx, c) }) }
	if b := ix.bound.Load(); b != nil && b.f == f {
		c.b = b
	} else if c.b, err = bind(); err != nil {
		return nil, err
	}
	if c.b.err != nil {
		schema, err := c.schema(ctx)
		if err != nil {
			return nil, err
		}
		if schema != c.b.schema {
			if c.b, err = bind(); err != nil {
				return nil, err
			}
		}
		if c.b.err != nil {
			return nil, c.b.err
		}
	}
	return c, nil
}

// reader returns the call's reading connection, taking one at first need.
func (c *call) reader(ctx context.Context) (*store.Conn, error) {
	if c.conn == nil {
		conn, err := c.f.st.Reader(ctx)
		if err != nil {
			return nil, err
		}
		c.conn = conn
	}
	return c.conn, nil
}

// empty reports whether the source's table has no row, read on the
// call's reader (taking one).
func (c *call) empty(ctx context.Context) (bool, error) {
	conn, err := c.reader(ctx)
	if err != nil {
		return false, err
	}
	return conn.Empty(ctx, c.b.src)
}

// schema reads the schema cookie on the call's reader (taking one).
func (c *call) schema(ctx context.Context) (int64, error) {
	conn, err := c.reader(ctx)
	if err != nil {
		return 0, err
	}
	return conn.Schema(ctx)
}

// putReader gives the call's reading connection back, if it took one:
// before work that takes connections of its own (a scan and its count)
// or waits for work that may need one (a flight led by another call), so
// that it never waits for a connection its own caller holds.
func (c *call) putReader() {
	if c.conn != nil {
		c.f.st.Release(c.conn)
		c.conn = nil
	}
}

// end releases the call's connection and file.
func (c *call) end() {
	c.putReader()
	c.f.release()
}

// bind resolves the source in the call's file. Resolving only reads and
// needs no lock: concurrent resolutions agree, and the latest is kept. A
// source whose triggers are not in place is attached again by the worker
// (or by the app's Rebuild, with AutoRebuild.Off), unless it was detached:
// its row is gone, and the index answers from SQLite until it is opened
// again.
func (ix *Index) bind(ctx context.Context, c *call) (*binding, error) {
	schema, err := c.schema(ctx)
	if err != nil {
		return nil, err
	}
	src, err := store.Resolve(ctx, c.conn, ix.cfg.Table, ix.cfg.Column, ix.cfg.AllowUnindexed)
	// Resolving reads in several statements: DDL committed meanwhile (a
	// migration, an attach undone, a Detach) may have shown it a schema
	// half old, half new, or failed it ("no such table"). The cookie read
	// again tells: changed, the caller resolves again.
	if after, serr := c.schema(ctx); serr == nil && after != schema {
		return nil, errStale
	}
	b := &binding{id: newID(), f: c.f, schema: schema, src: src}
	if err != nil {
		if !errors.Is(err, ErrNoSource) && !errors.Is(err, ErrInexactColumn) && !errors.Is(err, ErrNotIndexed) {
			return nil, err // not about the source: try again next call
		}
		b.err = fmt.Errorf("the source changed: %w", err)
	}
	old := ix.keep(b)
	if u := ix.up.undone.Load(); u != nil && b.err == nil && src.Logged && src.DatasetID != u.DatasetID {
		ix.up.undone.CompareAndSwap(u, nil) // attached again, by this index or another process
	}
	if b.err == nil && !src.Logged && old != nil && old.src != nil {
		switch {
		case ix.up.undone.Load() != nil:
			// This index undid its own first attach after its scan
			// failed: a retry attaches the source again (rebuildFailed).
		case old.f == b.f && (old.src.Row && !src.Row || old.detached):
			b.detached = true
			ix.m.setError(errors.New("the source was detached: answering from SQLite until the index is opened again"))
		default:
			ix.askRepair("the source's triggers are not in place (a migration, or a new database file)")
		}
	}
	return b, nil
}

// keep makes b the index's binding unless a newer file's is kept, and
// returns the one it replaced.
func (ix *Index) keep(b *binding) (old *binding) {
	for {
		old = ix.bound.Load()
		if old != nil && old.f.n > b.f.n {
			return old // a newer file's binding is kept
		}
		if ix.bound.CompareAndSwap(old, b) {
			return old
		}
	}
}

// rebindTo binds the source just attached by the call (open).
func (ix *Index) rebindTo(c *call, src *store.Source) *binding {
	b := &binding{id: newID(), f: c.f, schema: c.b.schema, src: src}
	ix.keep(b)
	return b
}

// orMoved returns err, or, when a statement failed because DDL committed
// since the call's binding (a column renamed under it: "no such
// column"), what the source's new binding says: errStale to start over,
// or why the source can no longer be answered for (ErrNoSource, say). A
// lock another connection holds (the busy timeout spent) is returned as
// it is: reading the schema would wait for the same lock again.
func (c *call) orMoved(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, errStale) || ctx.Err() != nil || store.LockHeld(err) {
		return err
	}
	if schema, e := c.schema(ctx); e != nil || schema == c.b.schema {
		return err
	}
	return c.rebind(ctx)
}

// rebind resolves the source again after a change of schema and reports
// errStale (or the binding's error).
func (c *call) rebind(ctx context.Context) error {
	b, err := c.ix.bind(ctx, c)
	if err != nil {
		return err
	}
	c.b = b
	if b.err != nil {
		return b.err
	}
	return errStale
}

// candidate returns the serving filter if it may cover the call's source
// (the probe checks its epoch, floor and mark).
func (c *call) candidate() *serving {
	if s := c.ix.filter(); s != nil && s.file == c.f && c.b.src != nil && s.src.ID == c.b.src.ID && !s.suspect.Load() {
		return s
	}
	return nil
}

// head probes without keys, as the follower and the worker do before
// they rely on the filter: the source resolved in the current schema,
// its head read, and the serving filter and the spellings caught up on
// the whole log.
func (c *call) head(ctx context.Context) error {
	_, err := retry(func() (struct{}, error) {
		return struct{}{}, c.orMoved(ctx, c.probe(ctx, c.candidate(), nil, false, c.f.st.LogChunk(), true))
	})
	return err
}
