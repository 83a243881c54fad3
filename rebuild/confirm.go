package rebuild

import (
	"context"
	"fmt"
)

// confirmChunk is how many keys one confirming query carries (well within
// SQLite's 32,766 variables); a short last chunk is padded with NULL,
// which matches nothing, so one prepared statement serves every chunk.
const confirmChunk = 256

// fetched reports whether the source holds the canonical key c under any
// equivalent spelling: one prepared statement (the table, and the alias
// table of stored non-NFC spellings), then the aliases a read-only index
// keeps in memory.
func (s *store) fetched(ctx context.Context, c string) (bool, error) {
	var found bool
	if err := s.fetchedStmt.QueryRowContext(ctx, c).Scan(&found); err != nil {
		return false, fmt.Errorf("confirm: %w", err)
	}
	if !found {
		return s.memFetched(ctx, c)
	}
	return true, nil
}

// confirm looks canonical keys up, confirmChunk per query, and returns the
// set of those the source holds under any equivalent spelling.
func (s *store) confirm(ctx context.Context, keys []string) (map[string]struct{}, error) {
	found := make(map[string]struct{}, len(keys))
	if len(keys) == 0 {
		return found, nil
	}
	args := make([]any, confirmChunk)
	for start := 0; start < len(keys); start += confirmChunk {
		chunk := keys[start:min(start+confirmChunk, len(keys))]
		for j := range args {
			if j < len(chunk) {
				args[j] = chunk[j]
			} else {
				args[j] = nil // NULL matches nothing: the padding binds no bytes
			}
		}
		rows, err := s.confirmStmt.QueryContext(ctx, args...)
		if err != nil {
			return nil, fmt.Errorf("confirm: %w", err)
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return nil, fmt.Errorf("confirm: %w", err)
			}
			found[k] = struct{}{}
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("confirm: %w", err)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("confirm: %w", err)
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
