package rebuild

import (
	"fmt"
	"math"
	"time"
)

// The self-maintaining filter. Every catch-up ends with checkDue: a cheap
// test on the filter's fill, then — at most once per 1/64 of the bits
// newly set — the estimate from a scan of its bits. When the estimated
// false-positive rate exceeds FPR × AutoRebuild.Factor, the index asks the
// database's worker for a rebuild (bypass while it runs, as for any
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

// checkDue asks for a rebuild if the call's filter is past due.
func (ix *Index) checkDue(c *call) {
	s := c.s
	if s == nil || !ix.cfg.AutoRebuild.whenDue() || ix.db.cfg.ReadOnly {
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
	est := s.f.Stats().EstimatedFPR
	if est <= limit {
		return
	}
	ix.autoRebuild(s, fmt.Sprintf("estimated false-positive rate %.3g%% above %.3g%% (target %.3g%% × %g)",
		100*est, 100*limit, 100*ix.cfg.FPR, ix.cfg.AutoRebuild.Factor))
}

// autoRebuild asks for the rebuild if s still serves and the spacing
// allows it now; otherwise a later insert checks again.
func (ix *Index) autoRebuild(s *serving, reason string) {
	now := time.Now()
	ix.mu.Lock()
	if st := ix.get(); st.mode != modeServing || st.filter != s {
		ix.mu.Unlock()
		return
	}
	if ix.autoTimer != nil {
		ix.mu.Unlock()
		return // already asked for, at a later time
	}
	took, ended := ix.m.lastAuto()
	at := now
	if !ended.IsZero() {
		at = ended.Add(costSpacing * took)
	}
	if !ix.lastAuto.IsZero() {
		at = later(at, ix.lastAuto.Add(ix.cfg.AutoRebuild.Every))
	}
	if at.After(now) {
		// Due, but too soon after the last one: ask at the time the
		// spacing allows, whether or not anything is inserted by then.
		ix.autoTimer = time.AfterFunc(at.Sub(now), func() {
			ix.mu.Lock()
			ix.autoTimer = nil
			ix.mu.Unlock()
			ix.autoRebuild(s, reason)
		})
		ix.mu.Unlock()
		return
	}
	ix.lastAuto = now
	ix.mu.Unlock()
	ix.m.autoStarted(reason)
	ix.askRebuild(autoPrefix + reason)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// autoPrefix marks the reason of an automatic rebuild.
const autoPrefix = "auto: "

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
