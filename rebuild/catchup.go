package rebuild

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/syncfilter"
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
	m := c.m
	takeS := s != nil && s.gen.Load() < to && s.gen.Load() >= from
	takeM := m != nil && m.gen.Load() < to && m.gen.Load() >= from // contiguous: never skip entries
	if !takeS {
		s = nil
	}
	if !takeM {
		m = nil
	}
	if err := ix.take(ctx, s, m, keys); err != nil {
		return err
	}
	if s != nil {
		if old := s.gen.Load(); old < to {
			ix.m.caughtUp.Add(to - max(old, from))
		}
		raise(&s.gen, to)
	}
	if m != nil {
		raise(&m.gen, to)
	}
	return nil
}

// take inserts keys (logged text keys) into s and their stored spellings
// that are not NFC into m, either of them nil; generations are the
// caller's.
func (ix *Index) take(ctx context.Context, s *serving, m *memo, keys []string) error {
	var canon []string
	var pairs [][2]string
	for _, k := range keys {
		ck, err := canonicalStored(k)
		if err != nil {
			ix.m.skipped.Add(1) // no query can name it
			continue
		}
		if ck != k {
			pairs = append(pairs, [2]string{ck, k})
		}
		canon = append(canon, ck)
	}
	if s != nil {
		if err := s.f.AddBatch(ctx, canon); err != nil {
			return fmt.Errorf("catch up: %w", err)
		}
	}
	if m != nil {
		m.add(pairs)
	}
	return nil
}

// testHookCatchUpChunk, when set by tests, runs after every chunk of log
// entries a catch-up reads.
var testHookCatchUpChunk func()

// catchUp brings s (nil in bypass) and the call's memo up to the call's
// head, reading the log in chunks. The generations move only once the
// whole read is known complete: a compaction (by any process) that
// committed while the log was read in several statements may have
// deleted entries the read had not reached, and then
// (ErrCannotCatchUp) neither s nor the memo took everything: their
// generations stay where they were, so that no call, waiting for this
// one or coming after it, trusts them.
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
		var sFrom uint64
		if s != nil {
			sFrom = s.gen.Load()
		}
		mFrom := m.gen.Load()
		start := mFrom
		if s != nil {
			start = min(start, sFrom)
		}
		err = readLog(ctx, conn, c.b.src, start, target, s == nil, func(read uint64, keys []string) error {
			// A chunk is taken by whichever of s and the memo does not
			// have all of it yet.
			ts, tm := s, m
			if read <= sFrom {
				ts = nil
			}
			if read <= mFrom {
				tm = nil
			}
			err := ix.take(ctx, ts, tm, keys)
			if testHookCatchUpChunk != nil {
				testHookCatchUpChunk()
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("catch up: %w", err)
		}
		if s != nil {
			if old := s.gen.Load(); old < target {
				ix.m.caughtUp.Add(target - max(old, start))
			}
			raise(&s.gen, target)
		}
		raise(&m.gen, target)
		return nil
	})
}

// readLog hands fn the text keys logged after from up to to, in chunks
// (store.Conn.ReadLog), and then checks that they were all there: the log
// is read in several statements, not one snapshot, and a compaction (by
// any process) that committed meanwhile raised the floor in the same
// transaction as it deleted. ErrCannotCatchUp: entries may have been
// skipped.
func readLog(ctx context.Context, conn *store.Conn, src *store.Source, from, to uint64, nonASCII bool, fn func(read uint64, keys []string) error) error {
	if err := conn.ReadLog(ctx, src, from, to, nonASCII, fn); err != nil {
		return err
	}
	h, err := conn.Head(ctx, src)
	if err != nil {
		return err
	}
	if h.Floor > from {
		return fmt.Errorf("read the log after %d: compacted up to %d meanwhile: %w", from, h.Floor, ErrCannotCatchUp)
	}
	return nil
}

// raise moves g up to v, never down.
func raise(g *atomic.Uint64, v uint64) {
	for old := g.Load(); old < v && !g.CompareAndSwap(old, v); old = g.Load() {
	}
}

// refillMax is the most log entries refill reads; a filter further ahead
// of the log's floor is dropped and rebuilt instead.
const refillMax = 1 << 20

// refill brings s back in line with the log after a change of schema,
// before any call trusts it in the new schema. A migration leaves the
// log as it was; a backup restored into the database in place brings
// back an older log, which the app may have written on since, under
// sequence numbers s already read (before a call saw the log's head go
// back). So s takes again every key the log retains up to gen, its
// generation before the probe (keys it holds already change nothing; a
// key of a row deleted since is a maybe more, confirmed in SQLite). What
// the log no longer retains cannot be taken again: if its floor moved
// since s last read it, s is dropped (errStale), as it is when the read
// would pass refillMax entries or a compaction moved the floor under it.
func (ix *Index) refill(ctx context.Context, c *call, s *serving, gen uint64) error {
	h := c.h
	drop := func(why string) error {
		ix.dropFilter(s, fmt.Errorf("after a change of schema (a backup restored into the database?), %s: %w", why, ErrCannotCatchUp))
		return errStale
	}
	switch {
	case h.Floor > s.floor.Load():
		return drop(fmt.Sprintf("the log was compacted from %d to %d since the filter read it", s.floor.Load(), h.Floor))
	case gen > h.Floor && gen-h.Floor > refillMax:
		return drop(fmt.Sprintf("%d log entries to read again", gen-h.Floor))
	}
	if gen > h.Floor {
		conn, err := c.reader(ctx)
		if err != nil {
			return err
		}
		err = readLog(ctx, conn, c.b.src, h.Floor, gen, false, func(_ uint64, keys []string) error {
			return ix.take(ctx, s, nil, keys)
		})
		switch {
		case errors.Is(err, syncfilter.ErrClosed):
			return errStale // dropped meanwhile
		case errors.Is(err, ErrCannotCatchUp):
			ix.dropFilter(s, fmt.Errorf("after a change of schema, reading the log again: %w", err))
			return errStale
		case err != nil:
			return fmt.Errorf("refill: %w", err)
		}
	}
	s.schema.Store(c.pr.Schema)
	return nil
}
