package rebuild

import (
	"context"
	"fmt"

	"github.com/syncfilter/syncfilter/normalize"
)

// Fetched reports whether the record with this id was fetched: whether the
// source holds it under any canonically equivalent spelling. The filter's
// "absent" is final; a "maybe" is confirmed in SQLite. Keys committed by
// any connection or process before the call are seen.
func (ix *Index) Fetched(ctx context.Context, key string) (bool, error) {
	if err := ix.enter(); err != nil {
		return false, err
	}
	defer ix.leave()
	c, err := normalize.String(key)
	if err != nil {
		return false, fmt.Errorf("fetched: %w", err)
	}
	ix.m.queries.Add(1)
	s, err := ix.current(ctx)
	if err != nil {
		return false, fmt.Errorf("fetched: %w", err)
	}
	if s != nil {
		if maybe, _ := s.f.MightContain(c); !maybe {
			ix.m.negatives.Add(1)
			return false, nil
		}
	} else {
		ix.m.bypass.Add(1)
	}
	var found bool
	if err := ix.st.fetchedStmt.QueryRowContext(ctx, c).Scan(&found); err != nil {
		return false, fmt.Errorf("fetched: confirm: %w", err)
	}
	if !found {
		if found, err = ix.st.memFetched(ctx, c); err != nil {
			return false, fmt.Errorf("fetched: %w", err)
		}
	}
	if s != nil {
		if found {
			ix.m.confirmed.Add(1)
		} else {
			ix.m.falsePos.Add(1)
		}
	}
	return found, nil
}

// Missing returns the keys of a page of server ids that were not fetched,
// in input order (duplicates kept). The filter answers most of them; the
// maybes are confirmed in SQLite in chunks of 256 keys per query. An
// invalid key fails the whole call with a *syncfilter.KeyError naming it.
func (ix *Index) Missing(ctx context.Context, keys []string) ([]string, error) {
	if err := ix.enter(); err != nil {
		return nil, err
	}
	defer ix.leave()
	canon, err := canonicalAll(keys)
	if err != nil {
		return nil, fmt.Errorf("missing: %w", err)
	}
	ix.m.queries.Add(uint64(len(keys)))
	s, err := ix.current(ctx)
	if err != nil {
		return nil, fmt.Errorf("missing: %w", err)
	}
	// ask holds the indexes of keys the filter cannot rule out.
	var ask []int
	if s != nil {
		maybe, err := s.f.MightContainBatch(make([]bool, 0, len(canon)), canon)
		if err != nil {
			return nil, fmt.Errorf("missing: %w", err)
		}
		ask = make([]int, 0, len(canon)/8)
		for i, m := range maybe {
			if m {
				ask = append(ask, i)
			}
		}
		ix.m.negatives.Add(uint64(len(canon) - len(ask)))
	} else {
		ask = make([]int, len(canon))
		for i := range ask {
			ask[i] = i
		}
		ix.m.bypass.Add(uint64(len(canon)))
	}
	found, err := ix.confirm(ctx, canon, ask)
	if err != nil {
		return nil, fmt.Errorf("missing: %w", err)
	}
	missing := make([]string, 0, len(keys)-len(found))
	next, confirmed := 0, uint64(0)
	for i, k := range keys {
		if next < len(ask) && ask[next] == i {
			next++
			if _, ok := found[canon[i]]; ok {
				confirmed++
				continue
			}
		}
		missing = append(missing, k)
	}
	if s != nil {
		ix.m.confirmed.Add(confirmed)
		ix.m.falsePos.Add(uint64(len(ask)) - confirmed)
	}
	return missing, nil
}

// confirm looks up canon[i] for every i in ask, confirmChunk keys per
// query, and returns the set of canonical keys the source holds (under
// that spelling or, through the alias table, another equivalent one).
func (ix *Index) confirm(ctx context.Context, canon []string, ask []int) (map[string]struct{}, error) {
	found := make(map[string]struct{}, len(ask))
	if len(ask) == 0 {
		return found, nil
	}
	stmt := ix.st.confirmStmt
	args := make([]any, confirmChunk)
	for start := 0; start < len(ask); start += confirmChunk {
		chunk := ask[start:min(start+confirmChunk, len(ask))]
		for j := range args {
			args[j] = canon[chunk[min(j, len(chunk)-1)]] // pad with the last key
		}
		rows, err := stmt.QueryContext(ctx, args...)
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
	if ix.st.mem != nil && !ix.st.mem.empty() {
		for _, i := range ask {
			if _, ok := found[canon[i]]; ok {
				continue
			}
			ok, err := ix.st.memFetched(ctx, canon[i])
			if err != nil {
				return nil, err
			}
			if ok {
				found[canon[i]] = struct{}{}
			}
		}
	}
	return found, nil
}
