package rebuild

import (
	"context"
	"fmt"
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
	c, err := canonical(key)
	if err != nil {
		return false, fmt.Errorf("fetched: %w", err)
	}
	ix.m.queries.Add(1)
	s, aliases, err := ix.current(ctx)
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
	found, err := ix.st.fetched(ctx, c, aliases)
	if err != nil {
		return false, fmt.Errorf("fetched: %w", err)
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
// maybes are confirmed in SQLite, as few statements as the page needs.
//
// A key that cannot be compared (not valid UTF-8, or longer than
// MaxKeyBytes) does not fail the page: every other key is answered, the
// invalid ones are listed as missing (never as fetched), and the error is
// an *InvalidKeysError naming their positions. Any other error fails the
// call and returns no keys.
func (ix *Index) Missing(ctx context.Context, keys []string) ([]string, error) {
	if err := ix.enter(); err != nil {
		return nil, err
	}
	defer ix.leave()
	canon, ask, bad := canonicalPage(keys) // ask: the keys the filter cannot rule out, so far every valid one
	ix.m.queries.Add(uint64(len(keys)))
	s, aliases, err := ix.current(ctx)
	if err != nil {
		return nil, fmt.Errorf("missing: %w", err)
	}
	if s != nil {
		asked := canon // with no invalid key, canon is the valid keys in order
		if bad != nil {
			asked = pick(canon, ask)
		}
		maybe, err := s.f.MightContainBatch(make([]bool, 0, len(asked)), asked)
		if err != nil {
			return nil, fmt.Errorf("missing: %w", err)
		}
		n := 0
		for j, m := range maybe {
			if m {
				ask[n] = ask[j]
				n++
			}
		}
		ix.m.negatives.Add(uint64(len(asked) - n))
		ask = ask[:n]
	} else {
		ix.m.bypass.Add(uint64(len(ask)))
	}
	found, err := ix.st.confirm(ctx, pick(canon, ask), aliases)
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
	if bad != nil {
		return missing, fmt.Errorf("missing: %w", bad)
	}
	return missing, nil
}
