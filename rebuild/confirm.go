package rebuild

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// confirmSizes are the sizes of the prepared IN (...) statements that
// confirm a page's maybes: a batch of n keys uses the smallest size that
// holds it (the rest of the list is NULL, which matches nothing and binds
// no bytes), or the largest repeatedly. A page of 10,000 maybes takes
// three statements; SQLite allows 32,766 variables.
var confirmSizes = [...]int{16, 64, 256, 1024, 4096}

// confirmStmts holds the confirmation statements, prepared on first use:
// one per size, with and without the alias lookup.
type confirmStmts struct {
	mu    sync.Mutex // guards stmts
	stmts map[confirmKey]*sql.Stmt
}

type confirmKey struct {
	size    int
	aliases bool
}

func (c *confirmStmts) get(ctx context.Context, s *store, k confirmKey) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stmts[k]; ok {
		return st, nil
	}
	params := make([]string, k.size)
	for i := range params {
		params[i] = "?" + strconv.Itoa(i+1)
	}
	in := "(" + strings.Join(params, ", ") + ")"
	q := `SELECT ` + s.qCol + ` FROM ` + s.qTable + ` WHERE ` + s.qCol + ` IN ` + in
	if k.aliases {
		q += ` UNION ALL SELECT a.canon FROM ` + s.aliasTable + ` a WHERE a.canon IN ` + in + `
			AND EXISTS (SELECT 1 FROM ` + s.qTable + ` t WHERE t.` + s.qCol + ` = a.stored)`
	}
	st, err := s.r.PrepareContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("prepare confirmation: %w", err)
	}
	if c.stmts == nil {
		c.stmts = map[confirmKey]*sql.Stmt{}
	}
	c.stmts[k] = st
	return st, nil
}

func (c *confirmStmts) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.stmts {
		_ = st.Close()
	}
	c.stmts = nil
}

// fetched reports whether the source holds the canonical key c under any
// equivalent spelling: one prepared statement (with the alias table only
// when it has rows), then the aliases a read-only index keeps in memory.
func (s *store) fetched(ctx context.Context, c string, aliases bool) (bool, error) {
	st := s.existsStmt
	if aliases && s.attached {
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
	largest := confirmSizes[len(confirmSizes)-1]
	args := make([]any, 0, min(len(keys), largest))
	for start := 0; start < len(keys); {
		n := min(len(keys)-start, largest)
		size := largest
		for _, sz := range confirmSizes {
			if sz >= n {
				size = sz
				break
			}
		}
		st, err := s.confirms.get(ctx, s, confirmKey{size, aliases})
		if err != nil {
			return nil, err
		}
		args = args[:0]
		for _, k := range keys[start : start+n] {
			args = append(args, k)
		}
		for len(args) < size {
			args = append(args, nil) // NULL matches nothing
		}
		if err := collect(ctx, st, args, found); err != nil {
			return nil, err
		}
		start += n
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
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return fmt.Errorf("confirm: %w", err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return fmt.Errorf("confirm: %w", err)
		}
		found[k] = struct{}{}
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("confirm: %w", err)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("confirm: %w", err)
	}
	return nil
}
