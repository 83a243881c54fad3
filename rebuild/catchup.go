package rebuild

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// Catch-up. The triggers append every inserted or re-keyed id to the
// source's log; its increasing sequence is the generation. Before a call
// trusts the filter's "absent", the filter takes every key logged up to
// the head the call's probe read (and the spellings every stored
// spelling that is not NFC): rows written by any connection or process
// before the call are seen. The probe brings the first chunk of new
// entries itself (apply); a filter further behind reads the rest in
// chunks, one statement and one JSON array per chunk (catchUpLog), one
// goroutine leading for all (a flight), no lock held meanwhile. Calls
// that read the same entries at the same time insert them twice:
// harmless. Marks move only once everything up to them was taken.

// apply inserts keys, the text keys logged after from up to to, into s
// (nil: no filter to feed) and the call's spellings, each if it has read
// the log up to from at least (a mark never skips entries); if to is the
// call's head, their marks move there.
func (ix *Index) apply(ctx context.Context, c *call, s *serving, from, to uint64, keys []string) error {
	sp := c.sp
	takeS := s != nil && s.at.gen() < to && s.at.gen() >= from
	takeSp := sp != nil && sp.at.gen() < to && sp.at.gen() >= from
	if !takeS {
		s = nil
	}
	if !takeSp {
		sp = nil
	}
	if err := ix.take(ctx, s, sp, keys); err != nil {
		return err
	}
	if to != c.h.Seq {
		return nil // catchUpLog reads the rest, then moves the marks
	}
	ix.reached(s, sp, from, mark{gen: c.h.Seq, tag: c.h.Tag})
	return nil
}

// reached moves the marks of s and sp (either nil), which took every
// entry logged after from, to at; the entries s had not taken yet count
// as caught up.
func (ix *Index) reached(s *serving, sp *spellingSet, from uint64, at mark) {
	if s != nil {
		if old := s.at.gen(); s.at.raise(at) {
			ix.m.caughtUp.Add(at.gen - max(old, from))
		}
	}
	if sp != nil {
		sp.at.raise(at)
	}
}

// take inserts keys (logged text keys) into s and their stored spellings
// that are not NFC into sp, either of them nil; marks are the caller's.
func (ix *Index) take(ctx context.Context, s *serving, sp *spellingSet, keys []string) error {
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
	if sp != nil {
		sp.add(pairs)
	}
	return nil
}

// catchUpLog brings s and the call's spellings (either may be nil) up to
// the call's head, reading the log in chunks. The marks move only once
// the whole read is known complete: a compaction (by any process) that
// committed while the log was read in several statements may have
// deleted entries the read had not reached, and then (ErrCannotCatchUp)
// neither s nor the spellings took everything: their marks stay where
// they were, so that no call, waiting for this one or coming after it,
// trusts them.
func (ix *Index) catchUpLog(ctx context.Context, c *call, s *serving) error {
	h, sp := c.h, c.sp
	done := func() bool {
		return (s == nil || s.at.gen() >= h.Seq) && (sp == nil || sp.at.gen() >= h.Seq)
	}
	if done() {
		return nil
	}
	return ix.up.catchUp.Do(ctx, done, c.putReader, func() error {
		conn, err := c.reader(ctx)
		if err != nil {
			return err
		}
		// Each reads from its own mark; the read starts at the lower.
		sFrom, spFrom := h.Seq, h.Seq
		if s != nil {
			sFrom = s.at.gen()
		}
		if sp != nil {
			spFrom = sp.at.gen()
		}
		start := min(sFrom, spFrom)
		began := time.Now()
		err = readLog(ctx, conn, c.b.src, start, h.Seq, s == nil, func(read uint64, keys []string) error {
			// A chunk is taken by whichever of s and the spellings does
			// not have all of it yet.
			ts, tsp := s, sp
			if read <= sFrom {
				ts = nil
			}
			if read <= spFrom {
				tsp = nil
			}
			err := ix.take(ctx, ts, tsp, keys)
			if f := ix.db.cfg.knobs.catchUpChunk; f != nil {
				f()
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("catch up: %w", err)
		}
		if s != nil {
			ix.costs.entry.observe(time.Since(began), h.Seq-start)
		}
		ix.reached(s, sp, start, mark{gen: h.Seq, tag: h.Tag})
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

// refillMax is the most log entries a refill reads; a filter further
// ahead of the log's floor is dropped and rebuilt instead.
const refillMax = 1 << 20

// refillNow is the worker's refill job: the serving filter's log no
// longer holds what it read (the tag at its mark differs: a backup
// restored into the database in place, whose log the app may have
// written on since under sequence numbers the filter already read). The
// filter takes again every key the log retains up to its mark (keys it
// holds already change nothing; a key of a row deleted since is a maybe
// more, confirmed in SQLite), then its mark is the log's entry at that
// generation now, and calls trust it again. What the log no longer
// retains cannot be taken again: if its floor moved since the filter last
// read it, the filter is dropped, as it is when the head went back below
// its mark, the read would pass refillMax entries, or a compaction moved
// the floor under it. Calls answer from SQLite meanwhile.
func (ix *Index) refillNow(ctx context.Context) {
	s := ix.filter()
	if s == nil || !s.suspect.Load() {
		return
	}
	drop := func(why string) {
		ix.dropFilter(s, fmt.Errorf("the log no longer holds what the filter read (a backup restored into the database?), %s: %w", why, ErrCannotCatchUp))
	}
	c, err := ix.look(ctx)
	if err != nil {
		return
	}
	defer c.end()
	conn, err := c.reader(ctx)
	if err != nil {
		return
	}
	src := c.b.src
	if !src.Logged || !s.covers(c.f, src, s.epoch) {
		drop("and the source changed")
		return
	}
	h, err := conn.Head(ctx, src)
	if err != nil {
		return
	}
	gen := s.at.gen()
	switch {
	case h.Epoch != s.epoch:
		drop("and the source was attached again")
		return
	case h.Seq < gen:
		drop(fmt.Sprintf("its head went back from %d to %d", gen, h.Seq))
		return
	case h.Floor > s.floor.Load():
		drop(fmt.Sprintf("the log was compacted from %d to %d since the filter read it", s.floor.Load(), h.Floor))
		return
	case gen > h.Floor && gen-h.Floor > refillMax:
		drop(fmt.Sprintf("%d log entries to read again", gen-h.Floor))
		return
	}
	err = readLog(ctx, conn, src, h.Floor, gen, false, func(_ uint64, keys []string) error {
		return ix.take(ctx, s, nil, keys)
	})
	switch {
	case errors.Is(err, syncfilter.ErrClosed):
		return // dropped meanwhile
	case errors.Is(err, ErrCannotCatchUp):
		ix.dropFilter(s, fmt.Errorf("reading the log again after a restore: %w", err))
		return
	case err != nil:
		return // the next call asks again
	}
	tag, err := conn.TagAt(ctx, src, gen)
	if err != nil {
		return
	}
	s.at.set(mark{gen: gen, tag: tag})
	s.suspect.Store(false)
	ix.m.refills.Add(1)
}
