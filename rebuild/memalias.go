package rebuild

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/syncfilter/syncfilter/normalize"
)

// memAliases are the stored non-NFC spellings of keys, by canonical form,
// kept in memory by a read-only index, which may not write them to the
// alias table.
type memAliases struct {
	mu sync.RWMutex        // guards m
	m  map[string][]string // canonical key → stored spellings
}

func (a *memAliases) add(pairs [][2]string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range pairs {
		if !slices.Contains(a.m[p[0]], p[1]) {
			a.m[p[0]] = append(a.m[p[0]], p[1])
		}
	}
}

func (a *memAliases) get(canon string) []string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.m[canon]
}

func (a *memAliases) empty() bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return len(a.m) == 0
}

// scanAliases reads every stored key that holds a non-ASCII character (an
// ASCII string is its own NFC form; SQLite filters the rest without
// handing them over) and keeps the spellings that are not NFC.
func (s *store) scanAliases(ctx context.Context) error {
	rows, err := s.r.QueryContext(ctx, `SELECT `+s.qCol+` FROM `+s.qTable+` WHERE `+s.qCol+` GLOB ?`, "*[^\u0001-\u007f]*")
	if err != nil {
		return fmt.Errorf("scan aliases: %w", err)
	}
	defer rows.Close()
	var pairs [][2]string
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			return fmt.Errorf("scan aliases: %w", err)
		}
		if c, err := normalize.String(key); err == nil && c != key {
			pairs = append(pairs, [2]string{c, key})
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("scan aliases: %w", err)
	}
	s.mem.add(pairs)
	return nil
}

// memFetched reports whether a stored spelling of canon that only the
// in-memory aliases know is in the table.
func (s *store) memFetched(ctx context.Context, canon string) (bool, error) {
	if s.mem == nil {
		return false, nil
	}
	for _, stored := range s.mem.get(canon) {
		var found bool
		if err := s.existsStmt.QueryRowContext(ctx, stored).Scan(&found); err != nil {
			return false, fmt.Errorf("confirm alias: %w", err)
		}
		if found {
			return true, nil
		}
	}
	return false, nil
}
