package rebuild

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// Catch-up. The triggers append every inserted or re-keyed id to the
// source's log; its increasing sequence is the generation. Before a call
// trusts the filter's "absent", the filter takes every key logged up to
// the head the call read (and the memo every stored spelling that is not
// NFC): rows written by any connection or process before the call are
// seen. The log is read in chunks, one statement and one JSON array per
// chunk (store.Conn.ReadLog). One caller catches up for all (a flight);
// no lock is held meanwhile.

// testHookCatchUpChunk, when set by tests, runs after every chunk of log
// entries a catch-up reads.
var testHookCatchUpChunk func()

// catchUp brings s (nil in bypass) and the call's memo up to the call's
// head.
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
		mg := m.gen.Load()
		if s == nil {
			return ix.readLog(ctx, conn, c, mg, target, nil, m)
		}
		sg := s.gen.Load()
		// Bring the one behind up to the other, then both together.
		if sg < mg {
			if err := ix.readLog(ctx, conn, c, sg, min(mg, target), s, nil); err != nil {
				return err
			}
		} else if mg < sg {
			if err := ix.readLog(ctx, conn, c, mg, min(sg, target), nil, m); err != nil {
				return err
			}
		}
		from := max(s.gen.Load(), m.gen.Load())
		return ix.readLog(ctx, conn, c, from, target, s, m)
	})
}

// readLog reads the log entries after from up to upTo into s (all keys)
// and m (the spellings that are not NFC), either of which may be nil, and
// moves their generations to upTo.
func (ix *Index) readLog(ctx context.Context, conn *store.Conn, c *call, from, upTo uint64, s *serving, m *memo) error {
	if from >= upTo {
		return nil
	}
	var canon []string
	var pairs [][2]string
	err := conn.ReadLog(ctx, c.b.src, from, upTo, s == nil, func(keys []string) error {
		canon = canon[:0]
		for _, k := range keys {
			ck, err := canonical(k)
			if err != nil {
				ix.m.skipped.Add(1) // no query can name it
				continue
			}
			if ck != k && m != nil {
				pairs = append(pairs, [2]string{ck, k})
			}
			canon = append(canon, ck)
		}
		if testHookCatchUpChunk != nil {
			defer testHookCatchUpChunk()
		}
		if s == nil {
			return nil
		}
		return s.f.AddBatch(ctx, canon)
	})
	if err != nil {
		return fmt.Errorf("catch up: %w", err)
	}
	// The log is read in chunks, not in one transaction: a compaction (by
	// any process) that committed meanwhile may have deleted entries this
	// read had not reached. It raised the floor in the same transaction.
	h, err := conn.Head(ctx, c.b.src)
	if err != nil {
		return fmt.Errorf("catch up: %w", err)
	}
	if h.Floor > from {
		return fmt.Errorf("catch up from generation %d: the log was compacted up to %d while it was read: %w", from, h.Floor, ErrCannotCatchUp)
	}
	if m != nil {
		m.add(pairs)
		raise(&m.gen, upTo)
	}
	if s != nil {
		ix.m.caughtUp.Add(upTo - s.gen.Load())
		raise(&s.gen, upTo)
	}
	return nil
}

// raise moves g up to v, never down.
func raise(g *atomic.Uint64, v uint64) {
	for old := g.Load(); old < v && !g.CompareAndSwap(old, v); old = g.Load() {
	}
}
