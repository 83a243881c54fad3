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
	canon, err := canonical(key)
	if err != nil {
		return false, fmt.Errorf("fetched: %w", err)
	}
	ix.m.queries.Add(1)
	c, err := ix.begin(ctx)
	if err != nil {
		return false, fmt.Errorf("fetched: %w", err)
	}
	defer c.end()
	if c.s != nil {
		if maybe, _ := c.s.f.MightContain(canon); !maybe {
			ix.m.negatives.Add(1)
			return false, nil
		}
	} else {
		ix.m.bypass.Add(1)
	}
	found, err := c.fetched(ctx, canon)
	if err != nil {
		return false, fmt.Errorf("fetched: %w", err)
	}
	if c.s != nil {
		ix.m.confirmedPage(1, boolInt(found))
		ix.m.served(1, 1-boolInt(found))
	}
	return found, nil
}

// Missing returns the keys of a page of server ids that were not fetched,
// in input order, each canonical id once: of several spellings of one id
// in the page (NFC and NFD, or the same bytes twice), the first is
// listed, so the app fetches and stores the record once. The filter
// answers most keys; the maybes are confirmed in SQLite, in one statement
// for a page of up to 32,768 keys.
//
// A key that cannot be compared (not valid UTF-8, or longer than
// MaxKeyBytes) does not fail the page: every other key is answered, the
// invalid ones are listed as missing (never as fetched), and the error is
// an *InvalidKeysError naming their positions: use the keys returned, and
// report or skip the invalid ones. Any other error fails the call and
// returns no keys.
func (ix *Index) Missing(ctx context.Context, keys []string) ([]string, error) {
	if err := ix.enter(); err != nil {
		return nil, err
	}
	defer ix.leave()
	p := newPage(keys) // ask: the keys the filter cannot rule out; so far every valid one
	ix.m.queries.Add(uint64(len(keys)))
	c, err := ix.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("missing: %w", err)
	}
	defer c.end()
	served := uint64(0)
	if c.s != nil {
		asked := p.askedKeys()
		served = uint64(len(asked))
		maybe, err := c.s.f.MightContainBatch(make([]bool, 0, len(asked)), asked)
		if err != nil {
			return nil, fmt.Errorf("missing: %w", err)
		}
		p.keep(maybe)
		ix.m.negatives.Add(uint64(len(asked) - len(p.ask)))
	} else {
		ix.m.bypass.Add(uint64(len(p.ask)))
	}
	found, err := c.confirm(ctx, p.askedKeys())
	if err != nil {
		return nil, fmt.Errorf("missing: %w", err)
	}
	missing, confirmed := p.missing(found)
	if c.s != nil {
		ix.m.confirmedPage(uint64(len(p.ask)), confirmed)
		ix.m.served(served, uint64(len(p.ask))-confirmed)
	}
	if p.bad != nil {
		return missing, fmt.Errorf("missing: %w", p.bad)
	}
	return missing, nil
}

// fetched confirms one canonical key: stored as is, through the alias
// table, or under a spelling the memo knows.
func (c *call) fetched(ctx context.Context, canon string) (bool, error) {
	conn, err := c.reader(ctx)
	if err != nil {
		return false, err
	}
	found, err := conn.Exists(ctx, c.b.src, canon, c.h.Aliases)
	if err != nil || found {
		return found, err
	}
	for _, sp := range c.m.spellings(canon) {
		if found, err := conn.Exists(ctx, c.b.src, sp, false); err != nil || found {
			return found, err
		}
	}
	return false, nil
}

// confirm looks canonical keys up and returns the set of those the source
// holds under any equivalent spelling.
func (c *call) confirm(ctx context.Context, keys []string) (map[string]struct{}, error) {
	found := make(map[string]struct{}, len(keys))
	if len(keys) == 0 {
		return found, nil
	}
	conn, err := c.reader(ctx)
	if err != nil {
		return nil, err
	}
	list := keys
	var spelled map[string]string // stored spelling → canonical key asked
	if c.m != nil && c.m.filled.Load() {
		for _, k := range keys {
			for _, sp := range c.m.spellings(k) {
				if spelled == nil {
					spelled = map[string]string{}
					list = append([]string(nil), keys...)
				}
				spelled[sp] = k
				list = append(list, sp)
			}
		}
	}
	got, _, err := conn.Confirm(ctx, c.b.src, list, c.h.Aliases, nil, nil)
	if err != nil {
		return nil, err
	}
	for _, k := range got {
		if canon, ok := spelled[k]; ok {
			k = canon
		}
		found[k] = struct{}{}
	}
	return found, nil
}

// MarkFetched records keys as fetched in the library's own table
// (Source.Table empty), in canonical form, in one transaction; the log
// hands them to the filter. An app's table is written by the app, on its
// own connection: the triggers log every row.
func (ix *Index) MarkFetched(ctx context.Context, keys ...string) error {
	if err := ix.enter(); err != nil {
		return err
	}
	defer ix.leave()
	if ix.cfg.Table != "" {
		return fmt.Errorf("mark fetched in %s: %w", ix.cfg.Table, ErrNotOwnTable)
	}
	if ix.db.cfg.ReadOnly {
		return fmt.Errorf("mark fetched: %w", ErrReadOnly)
	}
	canon, err := canonicalAll(keys)
	if err != nil {
		return fmt.Errorf("mark fetched: %w", err)
	}
	c, err := ix.look(ctx)
	if err != nil {
		return fmt.Errorf("mark fetched: %w", err)
	}
	defer c.end()
	return c.v.f.st.InsertOwn(ctx, c.b.src, canon)
}

func boolInt(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
