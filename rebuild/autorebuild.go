package rebuild

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// The self-maintaining filter. Every catch-up ends with checkDue: a cheap
// test on the filter's fill, then — at most once per 1/64 of the bits
// newly set — the estimate from a scan of its bits. When the estimated
// false-positive rate exceeds FPR × AutoRebuild.Factor, the index asks the
// database's worker for a rebuild (bypass while it scans, as for any
// rebuild).
//
// How often: a rebuild puts the collection in bypass for a scan, so
// automatic rebuilds are spaced by that cost: the next may start once
// nine times the last one's scan has passed since its filter started
// serving (the collection is in bypass at most a tenth of the time), and
// not before AutoRebuild.Every since the last began.
//
// How large: rows × Headroom, or, when the filter filled up within
// fastGrowth of being built (an initial sync, a bulk import), rows ×
// growthFactor: a source that grew that fast is likely to grow as much
// again, and each rebuild would otherwise put the collection in bypass
// for a scan. Memory stays bounded by what the rows warrant.
const (
	fastGrowth   = 10 * time.Minute
	growthFactor = 8
	costSpacing  = 9
)

// autoState is when the last automatic rebuild was asked for, and the
// timer that asks for one the spacing delayed.
type autoState struct {
	mu    sync.Mutex // guards the fields below; taken after no other lock
	last  time.Time
	timer *time.Timer // armed: a due filter is checked again when it fires
}

// checkDue asks for a rebuild if s is past due.
func (ix *Index) checkDue(s *serving) {
	if !ix.cfg.AutoRebuild.whenDue() || ix.db.cfg.ReadOnly {
		return
	}
	_, _, ones := s.f.Load()
	p := s.f.Params()
	limit := ix.cfg.FPR * ix.cfg.AutoRebuild.Factor
	// fill^k is the rate of an evenly loaded filter; blocks vary, so the
	// real rate is higher. Far below the limit, nothing to do.
	if math.Pow(float64(ones)/float64(p.M), float64(p.K)) < limit/4 {
		return
	}
	if last := s.checkedOnes.Load(); ones < last+p.M/64 || !s.checkedOnes.CompareAndSwap(last, ones) {
		return // checked recently, or another caller is checking
	}
	if est := s.f.Stats().EstimatedFPR; est > limit {
		ix.autoRebuild(fmt.Sprintf("estimated false-positive rate %.3g%% above %.3g%% (target %.3g%% × %g)",
			100*est, 100*limit, 100*ix.cfg.FPR, ix.cfg.AutoRebuild.Factor))
	}
}

// autoRebuild asks for the rebuild now if the spacing allows it, or arms
// the timer to check the filter again when it does (whichever filter
// serves then: one dropped meanwhile is not kept alive, and the one that
// replaced it is judged on its own fill).
func (ix *Index) autoRebuild(why string) {
	now := ix.db.cfg.knobs.autoClock()
	took, ended := ix.m.lastAuto()
	a := &ix.rb.auto
	a.mu.Lock()
	at := now
	if !ended.IsZero() {
		at = ended.Add(costSpacing * took)
	}
	if !a.last.IsZero() {
		at = later(at, a.last.Add(ix.cfg.AutoRebuild.Every))
	}
	if at.After(now) {
		if a.timer == nil && ix.life.ctx.Err() == nil {
			a.timer = time.AfterFunc(at.Sub(now), ix.autoTimerFired)
		}
		a.mu.Unlock()
		return
	}
	a.last = now
	a.mu.Unlock()
	ix.m.autoStarted(why)
	ix.askRebuild(reason{text: why, auto: true})
}

// autoTimerFired checks the filter serving now, once the spacing allows a
// rebuild.
func (ix *Index) autoTimerFired() {
	a := &ix.rb.auto
	a.mu.Lock()
	a.timer = nil
	a.mu.Unlock()
	if ix.enter() != nil {
		return
	}
	defer ix.leave()
	if s := ix.filter(); s != nil {
		s.checkedOnes.Store(0) // judge it now, however recently it was checked
		ix.checkDue(s)
	}
}

// stopTimer stops an armed timer (Close).
func (r *rebuilder) stopTimer() {
	r.auto.mu.Lock()
	defer r.auto.mu.Unlock()
	if r.auto.timer != nil {
		r.auto.timer.Stop()
		r.auto.timer = nil
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// sizeFor is the capacity a rebuild gives a filter for rows keys, growing
// faster than Headroom when prev (the filter it replaces, nil if none)
// filled up soon after it was built.
func (ix *Index) sizeFor(rows int64, prev *serving, auto bool) uint64 {
	factor := ix.cfg.Headroom
	if auto && prev != nil && time.Since(prev.built) < fastGrowth {
		factor = max(factor, growthFactor)
	}
	return max(ix.cfg.Capacity, uint64(math.Ceil(float64(rows)*factor)), 1024)
}
