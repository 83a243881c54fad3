package rebuild

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// genReader reads the source's generation and log floor on a connection
// of its own, through the driver's prepared statement directly. Every
// Fetched and Missing call reads the generation before trusting the
// filter; through database/sql's pool that costs several times the query
// itself (about 9 µs against 2 µs here).
//
// In WAL mode it first looks at the wal-index header (walindex.go): when no
// transaction committed since the last exact read, that read's values are
// returned without a query.
type genReader struct {
	mu   sync.Mutex     // one query at a time; guards conn, stmt, vals
	conn *sql.Conn      // held for the index's lifetime
	stmt driver.Stmt    // prepared on conn's driver connection
	vals []driver.Value // the row, reused

	wal    *walIndex                // nil: no fast path
	last   atomic.Pointer[genValue] // the last exact read, with the header seen before it
	fast   atomic.Uint64            // reads answered from the header (Stats)
	exacts atomic.Uint64            // reads that ran the query (Stats)
}

// genValue is one exact read of the generation.
type genValue struct {
	hdr         walHeader
	head, floor uint64
	aliases     bool // the alias table held a row
}

func newGenReader(ctx context.Context, db *sql.DB, query string) (*genReader, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("open generation reader: %w", err)
	}
	g := &genReader{conn: conn, vals: make([]driver.Value, 3)}
	err = conn.Raw(func(dc any) error {
		p, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return errors.New("driver cannot prepare with a context")
		}
		g.stmt, err = p.PrepareContext(ctx, query)
		return err
	})
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("open generation reader: %w", err)
	}
	return g, nil
}

// read returns the newest log sequence number, the log floor, and
// whether the alias table has rows, as of a moment during the call.
func (g *genReader) read() (v genValue, err error) {
	hdr, ok := g.wal.header()
	if ok {
		if last := g.last.Load(); last != nil && last.hdr == hdr {
			g.fast.Add(1)
			return *last, nil
		}
	}
	// The header is read before the query: a commit after it makes the
	// next header differ, so the value is never trusted past a commit.
	v, err = g.exact()
	if err == nil && ok {
		v.hdr = hdr
		g.last.Store(&v)
	}
	return v, err
}

// exact runs the generation query.
func (g *genReader) exact() (v genValue, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.exacts.Add(1)
	err = g.conn.Raw(func(any) error {
		//lint:ignore SA1019 the context-free call spares the driver a goroutine per query
		rows, err := g.stmt.Query(nil)
		if err != nil {
			return err
		}
		defer rows.Close()
		if err := rows.Next(g.vals); err != nil {
			if err == io.EOF {
				return errors.New("no row")
			}
			return err
		}
		h, ok1 := g.vals[0].(int64)
		f, ok2 := g.vals[1].(int64)
		a, ok3 := g.vals[2].(int64)
		if !ok1 || !ok2 || !ok3 || h < 0 || f < 0 {
			return fmt.Errorf("unexpected values %v, %v, %v", g.vals[0], g.vals[1], g.vals[2])
		}
		v.head, v.floor, v.aliases = uint64(h), uint64(f), a != 0
		return nil
	})
	if err != nil {
		return genValue{}, fmt.Errorf("read generation: %w", err)
	}
	return v, nil
}

func (g *genReader) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.wal.close()
	g.wal = nil
	_ = g.conn.Raw(func(any) error { return g.stmt.Close() })
	_ = g.conn.Close()
}
