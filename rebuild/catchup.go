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
		err = conn.ReadLog(ctx, c.b.src, start, target, s == nil, func(read uint64, keys []string) error {
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
			return err
		}
		// The log is read in chunks, not in one snapshot: a compaction
		// that committed meanwhile raised the floor in the same
		// transaction as it deleted.
		h, err := conn.Head(ctx, c.b.src)
		if err != nil {
			return fmt.Errorf("catch up: %w", err)
		}
		if h.Floor > start {
			return fmt.Errorf("catch up from generation %d: the log was compacted up to %d while it was read: %w", start, h.Floor, ErrCannotCatchUp)
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

// raise moves g up to v, never down.
func raise(g *atomic.Uint64, v uint64) {
	for old := g.Load(); old < v && !g.CompareAndSwap(old, v); old = g.Load() {
	}
}

// verifyMax is the most log entries verifyLog reads; a filter further
// ahead of the log's floor is rebuilt instead.
const verifyMax = 1 << 20

// verifyLog checks, after a change of schema, that the log still holds
// only what the serving filter took from it: every key logged up to the
// filter's generation, as far as the log retains, must be in the filter.
// A backup restored into the database in place changes the schema
// cookie, and the log it brings back may have gone on under sequence
// numbers the filter already passed (the app wrote after the restore,
// before any call saw it): a logged key the filter lacks proves it, and
// the filter and the memo are dropped (rebuilt meanwhile answering from
// SQLite). A log that went back below the generation is caught by the
// probe. The cost is a catch-up of the retained log, on a change of
// schema only; a filter more than verifyMax entries ahead of the floor is
// dropped unread. What the log no longer retains (compacted after such a
// restore, before any call) cannot be checked.
func (ix *Index) verifyLog(ctx context.Context, c *call, src *store.Source) error {
	s := ix.filter()
	if s == nil || s.file != c.f || s.src.ID != src.ID {
		return nil
	}
	conn, err := c.reader(ctx)
	if err != nil {
		return err
	}
	h, err := conn.Head(ctx, src)
	if err != nil {
		return err
	}
	gen := s.gen.Load()
	if !s.covers(c.f, src.ID, h.Epoch) || gen <= h.Floor || h.Seq < gen {
		return nil // another epoch, nothing retained to check, or gone back: the probe drops it
	}
	drop := func(why string) {
		ix.memo.Store(nil)
		ix.dropFilter(s, fmt.Errorf("%s (a backup restored into the database?): %w", why, ErrCannotCatchUp))
	}
	if gen-h.Floor > verifyMax {
		drop(fmt.Sprintf("after a change of schema, %d log entries to check below generation %d", gen-h.Floor, gen))
		return nil
	}
	var lacks string
	err = conn.ReadLog(ctx, src, h.Floor, gen, false, func(_ uint64, keys []string) error {
		canon := make([]string, 0, len(keys))
		for _, k := range keys {
			if ck, err := canonical(k); err == nil {
				canon = append(canon, ck)
			}
		}
		maybe, err := s.f.MightContainBatch(make([]bool, 0, len(canon)), canon)
		if err != nil {
			return err
		}
		for i, m := range maybe {
			if !m {
				lacks = canon[i]
				return errLacks
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, errLacks):
		drop(fmt.Sprintf("the log holds %.40q below generation %d, which the filter lacks", lacks, gen))
		return nil
	case errors.Is(err, syncfilter.ErrClosed):
		return nil // dropped meanwhile
	}
	return err
}

// errLacks ends verifyLog's read of the log at the first key the filter
// lacks.
var errLacks = errors.New("the filter lacks a logged key")
