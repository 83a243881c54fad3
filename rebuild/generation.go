package rebuild

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync"
)

// genReader reads the source's generation and log floor on a connection
// of its own, through the driver's prepared statement directly. Every
// Fetched and Missing call reads the generation before trusting the
// filter; through database/sql's pool that costs several times the query
// itself (about 9 µs against 2 µs here).
type genReader struct {
	mu   sync.Mutex     // one query at a time; guards conn, stmt, vals
	conn *sql.Conn      // held for the index's lifetime
	stmt driver.Stmt    // prepared on conn's driver connection
	vals []driver.Value // the row, reused
}

func newGenReader(ctx context.Context, db *sql.DB, query string) (*genReader, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("open generation reader: %w", err)
	}
	g := &genReader{conn: conn, vals: make([]driver.Value, 2)}
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

// read returns the newest log sequence number and the log floor.
func (g *genReader) read() (head, floor uint64, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
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
		if !ok1 || !ok2 || h < 0 || f < 0 {
			return fmt.Errorf("unexpected values %v, %v", g.vals[0], g.vals[1])
		}
		head, floor = uint64(h), uint64(f)
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("read generation: %w", err)
	}
	return head, floor, nil
}

func (g *genReader) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	_ = g.conn.Raw(func(any) error { return g.stmt.Close() })
	_ = g.conn.Close()
}
