package rebuild

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sync"
)

// confirmMax is the most keys one confirmation statement carries: the
// keys travel as one JSON array parameter (json_each), so one prepared
// statement serves every page size with no padding, and SQLite looks the
// keys up in sorted order, as it does for an IN (...) list.
const confirmMax = 1 << 15

// confirmStmts holds the two confirmation statements, prepared on first
// use: with and without the alias lookup.
//
// One connection is kept for confirmations ("hot"): its page cache stays
// warm with the key column's index, which a pool rotating over connections
// would spread thin. A confirmation that finds it busy (another Missing at
// the same time) uses the pool instead.
type confirmStmts struct {
	mu    sync.Mutex // guards stmts
	stmts [2]*sql.Stmt

	hotMu    sync.Mutex // held while a confirmation runs on hot; guards hot and hotStmts (close takes mu, then hotMu)
	hot      *sql.Conn
	hotStmts [2]*sql.Stmt // prepared on hot
}

// confirmSQL returns the confirmation statement: one row, one column, the
// JSON array of the keys found. The keys come back as the source stores
// them (and the alias table's canonical spellings), and Go compares them
// with the keys asked, byte for byte: a key SQLite did not find, or found
// under other bytes, is never taken as fetched. One row instead of a row
// per key found saves the driver's per-row cost (a cgo call and a
// conversion per row, about a microsecond).
func confirmSQL(s *store, aliases bool) string {
	q := `SELECT ` + s.qCol + ` AS v FROM ` + s.qTable + ` WHERE ` + s.qCol + ` IN (SELECT value FROM json_each(?1))`
	if aliases {
		q += ` UNION ALL SELECT a.canon FROM ` + s.aliasTable + ` a WHERE a.canon IN (SELECT value FROM json_each(?1))
			AND EXISTS (SELECT 1 FROM ` + s.qTable + ` t WHERE t.` + s.qCol + ` = a.stored)`
	}
	return `SELECT json_group_array(v) FROM (` + q + `)`
}

// hotStmt returns the statement prepared on the hot connection, if the
// connection is free: the caller then holds hotMu and calls release.
func (c *confirmStmts) hotStmt(ctx context.Context, s *store, aliases bool) (st *sql.Stmt, release func()) {
	if !c.hotMu.TryLock() {
		return nil, nil
	}
	i := 0
	if aliases {
		i = 1
	}
	if c.hot == nil {
		conn, err := s.r.Conn(ctx)
		if err != nil {
			c.hotMu.Unlock()
			return nil, nil
		}
		c.hot = conn
	}
	if c.hotStmts[i] == nil {
		st, err := c.hot.PrepareContext(ctx, confirmSQL(s, aliases))
		if err != nil {
			c.hotMu.Unlock()
			return nil, nil
		}
		c.hotStmts[i] = st
	}
	return c.hotStmts[i], c.hotMu.Unlock
}

func (c *confirmStmts) get(ctx context.Context, s *store, aliases bool) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := 0
	if aliases {
		i = 1
	}
	if c.stmts[i] != nil {
		return c.stmts[i], nil
	}
	st, err := s.r.PrepareContext(ctx, confirmSQL(s, aliases))
	if err != nil {
		return nil, fmt.Errorf("prepare confirmation: %w", err)
	}
	c.stmts[i] = st
	return st, nil
}

func (c *confirmStmts) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hotMu.Lock()
	defer c.hotMu.Unlock()
	for i := range c.stmts {
		for _, st := range []*sql.Stmt{c.stmts[i], c.hotStmts[i]} {
			if st != nil {
				_ = st.Close()
			}
		}
		c.stmts[i], c.hotStmts[i] = nil, nil
	}
	if c.hot != nil {
		_ = c.hot.Close()
		c.hot = nil
	}
}

// fetched reports whether the source holds the canonical key c under any
// equivalent spelling: one prepared statement (with the alias table only
// when it has rows), then the aliases a read-only index keeps in memory.
func (s *store) fetched(ctx context.Context, c string, aliases bool) (bool, error) {
	st := s.existsStmt
	if aliases && s.attached { // fetchedStmt, with the alias table, exists only then
		st = s.fetchedStmt
	}
	var found bool
	if err := st.QueryRowContext(ctx, c).Scan(&found); err != nil {
		return false, fmt.Errorf("confirm: %w", err)
	}
	if !found {
		return s.memFetched(ctx, c)
	}
	return true, nil
}

// confirm looks canonical keys up, as few statements as the sizes allow,
// and returns the set of those the source holds under any equivalent
// spelling (the alias table is consulted only when it has rows).
func (s *store) confirm(ctx context.Context, keys []string, aliases bool) (map[string]struct{}, error) {
	found := make(map[string]struct{}, len(keys))
	if len(keys) == 0 {
		return found, nil
	}
	aliases = aliases && s.attached
	st, release := s.confirms.hotStmt(ctx, s, aliases)
	if release != nil {
		defer release()
	} else {
		var err error
		if st, err = s.confirms.get(ctx, s, aliases); err != nil {
			return nil, err
		}
	}
	for start := 0; start < len(keys); start += confirmMax {
		list, err := json.Marshal(keys[start:min(start+confirmMax, len(keys))])
		if err != nil {
			return nil, fmt.Errorf("confirm: %w", err)
		}
		if err := collect(ctx, st, []any{string(list)}, found); err != nil {
			return nil, err
		}
	}
	if s.mem != nil && !s.mem.empty() {
		for _, k := range keys {
			if _, ok := found[k]; ok {
				continue
			}
			ok, err := s.memFetched(ctx, k)
			if err != nil {
				return nil, err
			}
			if ok {
				found[k] = struct{}{}
			}
		}
	}
	return found, nil
}

// collect runs a confirmation and adds the keys it returns to found.
func collect(ctx context.Context, st *sql.Stmt, args []any, found map[string]struct{}) error {
	var list string
	if err := st.QueryRowContext(ctx, args...).Scan(&list); err != nil {
		return fmt.Errorf("confirm: %w", err)
	}
	var keys []string
	if err := json.Unmarshal([]byte(list), &keys); err != nil {
		return fmt.Errorf("confirm: read found keys: %w", err)
	}
	for _, k := range keys {
		found[k] = struct{}{}
	}
	return nil
}
