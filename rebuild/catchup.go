package rebuild

import (
	"context"
	"fmt"
	"sync/atomic"
)

// Catch-up. The triggers append every inserted or re-keyed id to the
// source's log; its increasing sequence is the generation. Before a call
// trusts the filter's "absent", the filter takes every key logged up to
// the head the call's probe read (and the memo every stored spelling that
// is not NFC): rows written by any connection or process before the call
// are seen. The probe brings the first chunk of new entries itself
// (apply); a filter further behind reads the rest in chunks, one
// statement and one JSON array per chunk (catchUp), one caller leading
// for all (a flight), no lock held meanwhile. Calls that read the same
// entries at the same time insert them twice: harmless.

// apply inserts keys, the text keys logged after from up to to, into s
// (nil in bypass) and the call's memo, each if it covers the log up to
// from at least (a generation never skips entries), and moves their
// generations to to.
func (ix *Index) apply(ctx context.Context, c *call, s *serving, from, to uint64, keys []string) error {
	var canon []string
	var pairs [][2]string
	m := c.m
	for _, k := range keys {
		ck, err := canonical(k)
		if err != nil {
			ix.m.skipped.Add(1) // no query can name it
			continue
		}
		if ck != k {
			pairs = append(pairs, [2]string{ck, k})
		}
		canon = append(canon, ck)
	}
	if s != nil && s.gen.Load() < to && s.gen.Load() >= from {
		if err := s.f.AddBatch(ctx, canon); err != nil {
			return fmt.Errorf("catch up: %w", err)
		}
		if old := s.gen.Load(); old < to {
			ix.m.caughtUp.Add(to - max(old, from))
		}
		raise(&s.gen, to)
	}
	if m != nil && m.gen.Load() < to && m.gen.Load() >= from { // contiguous: never skip entries
		m.add(pairs)
		raise(&m.gen, to)
	}
	return nil
}

// testHookCatchUpChunk, when set by tests, runs after every chunk of log
// entries a catch-up reads.
var testHookCatchUpChunk func()

// catchUp brings s (nil in bypass) and the call's memo up to the call's
// head, reading the log in chunks. ErrCannotCatchUp: the log was
// compacted past where the read began while it read (by another
// process), so entries may have been skipped: the generations moved, but
// neither s nor the memo may be trusted.
func (ix *Index) catchUp(ctx context.Context, c *call, s *serving) error {
	target, m := c.h.Seq, c.m
	done := func() bool {
		return (s == nil || s.gen.Load() >= target) && m.gen.Load() >= target
	}
	return ix.follow.do(ctx, done, c.putReader, func() error {
		conn, err := c.reader(ctx)
		if err != nil {
			return err
		}
		from := m.gen.Load()
		if s != nil {
			from = min(from, s.gen.Load())
		}
		start := from
		err = conn.ReadLog(ctx, c.b.src, from, target, s == nil, func(read uint64, keys []string) error {
			err := ix.apply(ctx, c, s, from, read, keys)
			from = read
			if testHookCatchUpChunk != nil {
				testHookCatchUpChunk()
			}
			return err
		})
		if err != nil {
			return err
		}
		// The log is read in chunks, not in one snapshot: a compaction (by
		// any process) that committed meanwhile may have deleted entries
		// the read had not reached yet. It raised the floor in the same
		// transaction.
		h, err := conn.Head(ctx, c.b.src)
		if err != nil {
			return fmt.Errorf("catch up: %w", err)
		}
		if h.Floor > start {
			return fmt.Errorf("catch up from generation %d: the log was compacted up to %d while it was read: %w", start, h.Floor, ErrCannotCatchUp)
		}
		return nil
	})
}

// raise moves g up to v, never down.
func raise(g *atomic.Uint64, v uint64) {
	for old := g.Load(); old < v && !g.CompareAndSwap(old, v); old = g.Load() {
	}
}
