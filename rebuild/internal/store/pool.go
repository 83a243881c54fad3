package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync"
)

// pool hands out at most cap(sem) reading connections at a time, the most
// recently released first (its page cache is the warmest).
type pool struct {
	sem   chan struct{} // a token per connection handed out
	mu    sync.Mutex    // guards idle, shut and quiet
	idle  []*Conn
	shut  bool
	quiet bool // Quiesce: connections released are closed, not kept
}

// takeIdle pops the most recently released idle connection, if any.
func (p *pool) takeIdle() (c *Conn, shut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.idle); n > 0 && !p.shut {
		c, p.idle = p.idle[n-1], p.idle[:n-1]
	}
	return c, p.shut
}

// Reader takes a reading connection, waiting while every one is in use.
// Release it when done.
func (db *DB) Reader(ctx context.Context) (*Conn, error) {
	select {
	case db.pool.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	c, shut := db.pool.takeIdle()
	err := errors.New("database closed")
	if c == nil && !shut {
		c, err = db.ownConn(ctx)
	}
	if c == nil {
		<-db.pool.sem
		return nil, err
	}
	return c, nil
}

// ownConn opens a reading connection (the caller closes it) only while the
// file's name is still this file's, before and after: else it would read
// the app's new file under this one's schema and log.
func (db *DB) ownConn(ctx context.Context) (c *Conn, err error) {
	defer wrap(&err, "open reading connection")
	if err := db.SameFile(); err != nil {
		return nil, err
	}
	if c, err = db.openConn(ctx); err == nil {
		if err = db.SameFile(); err != nil {
			c.close()
			c = nil
		}
	}
	return c, err
}

// openConn takes a connection of the readers' database/sql pool.
func (db *DB) openConn(ctx context.Context) (*Conn, error) {
	sc, err := db.r.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return &Conn{sc: sc, db: db, stmts: map[string]driver.Stmt{}}, nil
}

// Release gives a connection back to the pool.
func (db *DB) Release(c *Conn) {
	p := db.pool
	p.mu.Lock()
	keep := !p.shut && !p.quiet
	if keep {
		p.idle = append(p.idle, c)
	}
	p.mu.Unlock()
	if !keep {
		c.close()
	}
	<-p.sem
}

func (p *pool) close() {
	p.mu.Lock()
	p.shut = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
}

func (p *pool) isQuiet() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.quiet
}

// quiesce sets the quiet flag and, on, closes the idle connections.
func (p *pool) quiesce(on bool) {
	p.mu.Lock()
	p.quiet = on
	idle := p.idle
	if on {
		p.idle = nil
	} else {
		idle = nil
	}
	p.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
}

// Readers returns how many reading connections are in use and idle.
func (db *DB) Readers() (inUse, idle int) {
	db.pool.mu.Lock()
	defer db.pool.mu.Unlock()
	return len(db.pool.sem), len(db.pool.idle)
}
