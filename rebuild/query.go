package rebuild

import (
	"context"
	"errors"
	"fmt"
)

// Fetched reports whether the record with this id was fetched: whether the
// source holds it under any canonically equivalent spelling. The filter's
// "absent" is final; a "maybe" is confirmed in SQLite. Keys committed by
// any connection or process before the call are seen. A key with one
// spelling (ASCII) that the filter cannot rule out alone is looked up
// by itself, as the app's own SELECT would: exact whatever the schema now
// says; a migration that made the source inexact is refused from the
// next page, follower poll or Wait on (docs/ARCHITECTURE.md).
func (ix *Index) Fetched(ctx context.Context, key string) (bool, error) {
	in, err := ix.enterCall()
	if err != nil {
		return false, err
	}
	defer ix.life.LeaveCall(in)
	defer ix.db.calling()()
	canon, err := canonical(key)
	if err != nil {
		ix.m.queries.Add(1)
		ix.m.invalid.Add(1)
		return false, fmt.Errorf("fetched: %w", err)
	}
	c, err := ix.look(ctx)
	if err != nil {
		return false, fmt.Errorf("fetched: %w", ended(ctx, err))
	}
	defer c.end()
	var found bool
	if maySpell(canon) || c.b.src.OwnMissing || ix.db.cfg.knobs.noLookup {
		var all []bool
		if all, err = c.answer(ctx, []string{canon}); err == nil {
			found = all[0]
		}
	} else {
		found, err = c.answerOne(ctx, canon)
	}
	if err != nil {
		return false, fmt.Errorf("fetched: %w", ended(ctx, c.f.explain(err)))
	}
	ix.m.queries.Add(1)
	ix.db.follow.called(ix)
	ix.db.work.called(ix)
	return found, nil
}

// Missing answers, for each id of a page of server ids, whether its
// record is missing: missing[i] is true when the source holds page[i]
// under no canonically equivalent spelling (fetch it), false when it
// holds it. One answer per position, so the loop over the page is
// simply
//
//	for i, id := range page {
//		if missing[i] {
//			fetch(id)
//		}
//	}
//
// and stays right when a page names an id twice or in two spellings
// (NFC and NFD): every position is answered on its own. The filter
// answers most keys; the maybes are confirmed in SQLite, in the same
// statement that checks the filter is up to date.
//
// A key that cannot be compared (not valid UTF-8, or longer than
// MaxKeyBytes) does not fail the page: every other key is answered, the
// invalid ones are answered missing (never fetched), and the error is an
// *InvalidKeysError naming their positions: use the answers, and report
// or skip the invalid keys. Any other error fails the call and returns no
// answers.
func (ix *Index) Missing(ctx context.Context, keys []string) ([]bool, error) {
	in, err := ix.enterCall()
	if err != nil {
		return nil, err
	}
	defer ix.life.LeaveCall(in)
	defer ix.db.calling()()
	p := newPage(keys)
	c, err := ix.look(ctx)
	if err != nil {
		return nil, fmt.Errorf("missing: %w", ended(ctx, err))
	}
	defer c.end()
	found, err := c.answer(ctx, p.askedKeys())
	if err != nil {
		return nil, fmt.Errorf("missing: %w", ended(ctx, c.f.explain(err)))
	}
	ix.m.queries.Add(uint64(len(keys)))
	if p.bad != nil {
		ix.m.invalid.Add(uint64(len(p.bad.Keys)))
	}
	ix.db.follow.called(ix)
	ix.db.work.called(ix)
	missing := p.missing(found)
	if p.bad != nil {
		return missing, fmt.Errorf("missing: %w", p.bad)
	}
	return missing, nil
}

// MarkFetched records keys as fetched in the library's own table
// (Source.Table empty), in canonical form, in one transaction; the log
// hands them to the filter. An app's table is written by the app, on its
// own connection: the triggers log every row.
func (ix *Index) MarkFetched(ctx context.Context, keys ...string) error {
	in, err := ix.enterCall()
	if err != nil {
		return err
	}
	defer ix.life.LeaveCall(in)
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
	if c.b.err != nil {
		return fmt.Errorf("mark fetched: %w", c.b.err)
	}
	return c.f.st.InsertOwn(ctx, c.b.src, canon)
}

// ended returns err, wrapping ctx's cause too when ctx ended: a statement
// interrupted by ctx fails with whatever the driver reports ("interrupted"
// on some), and the caller's errors.Is(err, context.Canceled) should hold
// however the driver says it.
func ended(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		return fmt.Errorf("%w (%w)", cause, err)
	}
	return err
}
