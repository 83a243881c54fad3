package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// pool hands out reading connections, the most recently released first
// (its page cache is the warmest), at most size at a time.
type pool struct {
	db    *DB
	sem   chan struct{} // a token per connection handed out
	mu    sync.Mutex    // guards idle, shut and quiet
	idle  []*Conn
	shut  bool
	quiet bool // Quiesce: connections released are closed, not kept
}

func newPool(db *DB, size int) *pool {
	return &pool{db: db, sem: make(chan struct{}, size)}
}

// IdleReader takes a reading connection idle in the pool, if there is
// one and the pool has room, without waiting or opening one. Release it
// when done.
func (db *DB) IdleReader() (*Conn, bool) {
	p := db.pool
	select {
	case p.sem <- struct{}{}:
	default:
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.idle); n > 0 && !p.shut {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		return c, true
	}
	<-p.sem
	return nil, false
}

// Reader takes a reading connection, waiting for one while every one is
// in use (ctx bounds the wait). Release it when done.
func (db *DB) Reader(ctx context.Context) (*Conn, error) {
	p := db.pool
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	p.mu.Lock()
	if p.shut {
		p.mu.Unlock()
		<-p.sem
		return nil, errors.New("database closed")
	}
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	c, err := db.ownConn(ctx)
	if err != nil {
		<-p.sem
		return nil, err
	}
	return c, nil
}

// ownConn takes a reading connection outside the readers' pool (for a
// long read: a scan), which the caller closes. A new connection opens the
// file by its name: only while the name is still this file's (checked
// before and after), or it would read the file the app put there instead
// under this one's schema and log.
func (db *DB) ownConn(ctx context.Context) (*Conn, error) {
	err := db.SameFile()
	var sc *sql.Conn
	if err == nil {
		sc, err = db.r.Conn(ctx)
	}
	if err == nil {
		c := newConn(db, sc)
		if err = db.SameFile(); err == nil {
			return c, nil
		}
		c.close()
	}
	return nil, fmt.Errorf("open reading connection: %w", err)
}

// Release gives a connection back to the pool.
func (db *DB) Release(c *Conn) {
	p := db.pool
	p.mu.Lock()
	if p.shut || p.quiet {
		p.mu.Unlock()
		c.close()
	} else {
		p.idle = append(p.idle, c)
		p.mu.Unlock()
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

// isQuiet reports whether the database is quiesced.
func (p *pool) isQuiet() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.quiet
}

// quiesce closes the idle connections and, while on, every connection
// released.
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
	p := db.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sem) - 0, len(p.idle)
}
