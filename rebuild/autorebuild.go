package rebuild

import (
	"fmt"
	"math"
	"time"
)

// The self-maintaining filter. Every insert (a cover, a catch-up) ends
// with checkDue: a cheap test on the filter's fill, then — at most once per
// 1/64 of the bits newly set — the estimate from a scan of its bits. When
// the estimated false-positive rate exceeds FPR × RebuildFactor, the owner
// starts a rebuild in the background (bypass while it runs, as for any
// rebuild), at most once per Config.AutoRebuildEvery; the new filter is
// sized for the rows then. Config.NoAutoRebuild leaves it to the app.

// checkDue starts a background rebuild if s is past due.
func (ix *Index) checkDue(s *serving) {
	if ix.cfg.NoAutoRebuild || ix.cfg.ReadOnly || s == nil {
		return
	}
	_, _, ones := s.f.Load()
	p := s.f.Params()
	limit := ix.cfg.FPR * ix.cfg.RebuildFactor
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
		100*est, 100*limit, 100*ix.cfg.FPR, ix.cfg.RebuildFactor))
}

// autoRebuild starts the rebuild if s still serves and the last automatic
// one is long enough ago.
func (ix *Index) autoRebuild(s *serving, reason string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if st := ix.get(); st.mode != modeServing || st.filter != s || ix.closing {
		return
	}
	if !ix.lastAuto.IsZero() && time.Since(ix.lastAuto) < ix.cfg.AutoRebuildEvery {
		s.checkedOnes.Store(0) // check again on a later insert
		return
	}
	ix.lastAuto = time.Now()
	ix.m.autoStarted(reason)
	ix.startBackground()
}
