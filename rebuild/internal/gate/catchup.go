package gate

import (
	"context"
	"fmt"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// Catch-up. The triggers append every inserted or re-keyed id to the
// source's log; its increasing sequence is the generation. Before a call
// trusts a view's "absent", the view takes every key logged up to the
// head the call's probe read. The probe brings a short tail itself; a
// longer one is read in chunks by the background (CatchUp), the calls
// meanwhile confirming in SQLite what the filter rules out. Goroutines
// that read the same entries at once insert them twice: harmless. A mark
// moves only once everything up to it was taken.

// canon appends the canonical forms of stored keys to canon (if not nil)
// and returns those stored in another spelling, as (canonical, stored);
// skipped counts the keys no query can name, left out.
func canon(cmp syncfilter.Compare, keys []string, canon *[]string) (pairs [][2]string, skipped uint64) {
	for _, k := range keys {
		ck, err := canonicalStored(cmp, k)
		if err != nil {
			skipped++
			continue
		}
		if ck != k {
			pairs = append(pairs, [2]string{ck, k})
		}
		if canon != nil {
			*canon = append(*canon, ck)
		}
	}
	return pairs, skipped
}

// take inserts logged keys into v's filter and notes their stored
// spellings; the mark is the caller's to move.
func (g *Gate) take(ctx context.Context, v *View, keys []string) error {
	var cs []string
	pairs, skipped := canon(g.cfg.Compare, keys, &cs)
	if v.F != nil {
		g.C.Skipped.Add(skipped)
		if err := v.F.AddBatch(ctx, cs); err != nil {
			return fmt.Errorf("catch up: %w", err)
		}
	}
	v.AddSpellings(pairs)
	return nil
}

// reached moves v's mark, which took every entry after from, to at.
func (g *Gate) reached(v *View, from uint64, at Mark) {
	old := v.Mark().Gen
	if v.raise(at) && v.F != nil {
		g.C.CaughtUp.Add(at.Gen - max(old, from))
	}
}

// catchUp brings v up to h, reading the log in chunks (all of it, or
// only what may be a stored spelling for a view without a filter).
func (c *Call) catchUp(ctx context.Context, v *View, h store.Head) error {
	from := v.Mark().Gen
	if from >= h.Seq {
		return nil
	}
	conn, err := c.Reader(ctx)
	if err != nil {
		return err
	}
	err = readLog(ctx, conn, c.b.src, from, h.Seq, v.F == nil, func(_ uint64, keys []string) error {
		err := c.g.take(ctx, v, keys)
		if f := c.g.cfg.Knobs.CatchUpChunk; f != nil {
			f()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("catch up: %w", err)
	}
	c.g.reached(v, from, Mark{h.Seq, h.Tag})
	return nil
}

// readLog hands fn the text keys logged after from up to to, in chunks,
// then checks that they were all there: a compaction (by any process)
// that committed meanwhile raised the floor in the transaction that
// deleted (ErrCannotCatchUp: entries may have been skipped).
func readLog(ctx context.Context, conn *store.Conn, src *store.Source, from, to uint64, nonASCII bool, fn func(read uint64, keys []string) error) error {
	if err := conn.ReadLog(ctx, src, from, to, nonASCII, fn); err != nil {
		return err
	}
	h, err := conn.Head(ctx, src)
	if err != nil {
		return err
	}
	if h.Floor > from {
		return fmt.Errorf("read the log after %d: compacted up to %d meanwhile: %w", from, h.Floor, store.ErrCannotCatchUp)
	}
	return nil
}

// CatchUp brings the view held up to the log's head, as a call would
// before trusting it: the follower between calls, Wait, a load. A view
// that no longer covers the source is dropped.
func (g *Gate) CatchUp(ctx context.Context) error {
	c, err := g.Look(ctx)
	if err != nil {
		return err
	}
	defer c.End()
	_, err = retry(func() (struct{}, error) {
		return struct{}{}, c.orMoved(ctx, c.catchUpHeld(ctx))
	})
	return err
}

func (c *Call) catchUpHeld(ctx context.Context) error {
	if err := c.newest(); err != nil { // a binding made since the call began (an attach)
		return err
	}
	v := c.g.Held()
	if v != nil && (v.Walked || v.File != c.F || !c.b.src.Logged || v.Src.ID != c.b.src.ID) {
		v = nil
	}
	var at Mark
	if v != nil {
		at = v.Mark()
	}
	pr, err := c.probe(ctx, v, at, nil, nil, false)
	if err != nil || v == nil || !c.b.src.Logged {
		return err
	}
	_, err = c.advance(ctx, v, at, pr, true)
	return err
}
