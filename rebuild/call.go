package rebuild

import (
	"context"
	"errors"
	"fmt"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// call is what one public call knows about its collection, as of a
// freshness check that began after the call did: the file, the source as
// resolved in the current schema, the log's head, the filter to trust (nil
// in bypass), caught up to that head, and the stored spellings that the
// alias table may lack. begin builds it; end releases what it holds.
type call struct {
	ix   *Index
	v    *view
	b    *binding
	conn *store.Conn // a reading connection, taken at first need
	h    store.Head  // when b.src.Logged
	s    *serving    // the filter to trust; nil: answer from SQLite
	m    *memo       // spellings beyond the alias table; nil if none can be
}

// binding is the source as resolved in one schema of one file. err is set
// when answers about it cannot be exact (the table is gone, its key column
// is no longer exact or indexed): every call returns it until the schema
// changes again.
type binding struct {
	f      *file
	schema uint64 // the view.schema it was resolved at
	src    *store.Source
	err    error
}

// headAt is the log's head as read at one view.
type headAt struct {
	f   *file
	ver uint64
	h   store.Head
}

// reader returns the call's reading connection, taking one at first need.
func (c *call) reader(ctx context.Context) (*store.Conn, error) {
	if c.conn == nil {
		conn, err := c.v.f.st.Reader(ctx)
		if err != nil {
			return nil, err
		}
		c.conn = conn
	}
	return c.conn, nil
}

// putReader gives the call's reading connection back, if it took one:
// before work that takes connections of its own (a scan and its count)
// or waits for work that may need one (a flight led by another call), so
// that it never waits for a connection its own caller holds.
func (c *call) putReader() {
	if c.conn != nil {
		c.v.f.st.Release(c.conn)
		c.conn = nil
	}
}

// end releases the call's connection and file.
func (c *call) end() {
	if c.conn != nil {
		c.v.f.st.Release(c.conn)
		c.conn = nil
	}
	c.v.f.release()
}

// begin checks freshness and returns the call's view of the collection,
// with the filter caught up (see call). The caller entered the index's
// activity.
func (ix *Index) begin(ctx context.Context) (*call, error) {
	c, err := ix.look(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.prepare(ctx); err != nil {
		c.end()
		return nil, err
	}
	return c, nil
}

// look checks freshness and resolves the source (see bind).
func (ix *Index) look(ctx context.Context) (*call, error) {
	v, err := ix.db.check(ctx)
	if err != nil {
		return nil, err
	}
	c := &call{ix: ix, v: v}
	if c.b, err = ix.bind(ctx, c); err == nil && c.b.err != nil {
		err = c.b.err
	}
	if err != nil {
		c.end()
		return nil, err
	}
	return c, nil
}

// prepare reads the log's head, the stored spellings and catches the
// filter up, or finds that the index must answer from SQLite.
func (c *call) prepare(ctx context.Context) (err error) {
	ix := c.ix
	if !c.b.src.Logged {
		// Never attached (read-only), or its triggers were lost and are
		// not back yet: no log and no filter can vouch for anything.
		ix.dropFilter(ix.get().filter, errors.New("the source's triggers are not in place"))
		c.m, err = ix.tableMemo(ctx, c)
		return err
	}
	if c.h, err = ix.readHead(ctx, c); err != nil {
		return err
	}
	if c.m, err = ix.logMemo(ctx, c); err != nil {
		return err
	}
	for {
		s := ix.filter()
		switch {
		case s == nil:
		case !s.covers(c.v.f, c.b.src.ID, c.h.Epoch):
			ix.dropFilter(s, errors.New("the source changed under the filter (attached again, or a new database file)"))
			continue
		case s.gen.Load() < c.h.Floor:
			// Another process compacted the log past this filter.
			ix.dropFilter(s, fmt.Errorf("catch up from generation %d, log starts after %d: %w", s.gen.Load(), c.h.Floor, ErrCannotCatchUp))
			continue
		}
		err := ix.catchUp(ctx, c, s)
		if errors.Is(err, ErrCannotCatchUp) {
			// Compacted while it was read: with the head as it is now,
			// the filter is dropped and the memo starts again.
			if c.h, err = ix.readHeadNow(ctx, c); err != nil {
				return err
			}
			if c.m, err = ix.logMemo(ctx, c); err != nil {
				return err
			}
			continue
		}
		if err != nil && s != nil && ix.filter() != s {
			continue // replaced or dropped meanwhile: look again
		}
		if err != nil {
			return err
		}
		c.s = s
		ix.checkDue(c)
		return nil
	}
}

// bind returns the source as resolved in the call's schema, resolving it
// again after a change of schema or file. Resolving only reads and needs
// no lock: concurrent resolutions agree, and the newest is kept. A source
// whose triggers are not in place is attached again by the worker (or by
// the app's Rebuild, with NoBackgroundRebuild).
func (ix *Index) bind(ctx context.Context, c *call) (*binding, error) {
	if b := ix.bound.Load(); b != nil && b.f == c.v.f && b.schema == c.v.schema {
		return b, nil
	}
	conn, err := c.reader(ctx)
	if err != nil {
		return nil, err
	}
	src, err := store.Resolve(ctx, conn, ix.cfg.Table, ix.cfg.Column, ix.cfg.AllowUnindexed)
	b := &binding{f: c.v.f, schema: c.v.schema, src: src}
	if err != nil {
		if !errors.Is(err, ErrNoSource) && !errors.Is(err, ErrInexactColumn) && !errors.Is(err, ErrNotIndexed) {
			return nil, err // not about the source: try again next call
		}
		b.err = fmt.Errorf("the source changed: %w", err)
	}
	ix.setBinding(b)
	if b.err == nil && !src.Logged && ix.opened.Load() && !ix.db.cfg.ReadOnly && !ix.cfg.NoBackgroundRebuild {
		ix.askRebuild("the source's triggers are not in place (a migration, or a new database file)")
	}
	return b, nil
}

// setBinding keeps b unless a binding of a newer file or schema is kept.
func (ix *Index) setBinding(b *binding) {
	for {
		old := ix.bound.Load()
		if old != nil && (old.f.n > b.f.n || old.f == b.f && old.schema > b.schema) {
			return
		}
		if ix.bound.CompareAndSwap(old, b) {
			return
		}
	}
}

// readHead returns the log's head as of the call's view.
func (ix *Index) readHead(ctx context.Context, c *call) (store.Head, error) {
	if h := ix.head.Load(); h != nil && h.f == c.v.f && h.ver == c.v.ver {
		return h.h, nil
	}
	return ix.readHeadNow(ctx, c)
}

// readHeadNow reads the log's head and keeps it for the call's view.
func (ix *Index) readHeadNow(ctx context.Context, c *call) (store.Head, error) {
	conn, err := c.reader(ctx)
	if err != nil {
		return store.Head{}, err
	}
	h, err := conn.Head(ctx, c.b.src)
	if err != nil {
		return store.Head{}, err
	}
	at := &headAt{f: c.v.f, ver: c.v.ver, h: h}
	for {
		old := ix.head.Load()
		if old != nil && (old.f.n > at.f.n || old.f == at.f && old.ver > at.ver) {
			break
		}
		if ix.head.CompareAndSwap(old, at) {
			break
		}
	}
	return h, nil
}
