package rebuild

import (
	"errors"
	"time"
)

// Stats are the measures of the index's effectiveness and health.
type Stats struct {
	Serving    bool   // a filter answers; false: bypass, every query goes to SQLite
	Rebuilding bool   // a rebuild is scanning the source
	Attached   bool   // the database records the source and its triggers are in place
	Upkeep     string // the background work asked for the index and not finished ("load", "refill", "rebuild", joined by "+"); "" when none

	// Every key asked lands in exactly one of LookupsAvoided,
	// ConfirmedPositives, FalsePositives, BypassLookups and InvalidKeys:
	// their sum is Queries once the calls in progress have returned (a
	// call counts its keys in those before it adds them to Queries).
	Queries            uint64 // keys asked about (Fetched and Missing)
	LookupsAvoided     uint64 // answered "not fetched" by the filter alone: no SQLite lookup
	ConfirmedPositives uint64 // filter maybes that SQLite confirmed
	FalsePositives     uint64 // filter maybes that SQLite refuted
	BypassLookups      uint64 // keys answered by SQLite without the filter's word: none served, or it was behind the log
	InvalidKeys        uint64 // keys that could not be compared (not UTF-8, too long): answered missing
	CaughtUp           uint64 // log entries inserted by catch-up
	SkippedKeys        uint64 // stored keys that are not valid UTF-8 or too long: no query can name them
	Reattached         uint64 // times the source was attached again after its triggers were lost
	Dropped            uint64 // filters dropped because the source changed under them
	Refills            uint64 // filters read the log again after a backup restored in place

	Generation     uint64  // the log generation the filter covers
	Items          uint64  // keys inserted into the filter, each once
	EstimatedItems float64 // distinct keys, estimated from its bits
	Capacity       uint64  // keys the filter was sized for
	FillRatio      float64
	EstimatedFPR   float64 // from the bits as they stand
	MeasuredFPR    float64 // maybes SQLite refuted ÷ keys asked, over about the last 65,536 keys a filter answered
	TargetFPR      float64
	RebuildDue     bool // EstimatedFPR > TargetFPR × AutoRebuild.Factor

	Rebuilds      uint64
	LastRebuild   time.Time
	LastRebuildIn time.Duration // from the start of the last rebuild to its filter serving
	LastBypass    time.Duration // how long the last rebuild kept the collection in bypass (its scan)
	LastReason    string        // why the last rebuild ran
	AutoRebuilds  uint64        // rebuilds the index asked for because the filter was due (see Source.AutoRebuild)
	AutoReason    string        // why the last one was asked for
	AutoTime      time.Duration // time spent in automatic rebuilds
	LastError     error         // of the last rebuild (or forced rebuild), nil if it succeeded
	CatchUpError  error         // of the last catch-up between calls, if it failed (the next call meets it too)
	SnapshotError error         // why the snapshot was not used at open, and why it may not be saved (ErrUnsafeTarget); nil if neither
}

// Stats returns the counters and, when a filter serves, its health (a scan
// of its bits: about a millisecond per 10 MiB).
func (ix *Index) Stats() Stats {
	m := &ix.m
	st := Stats{
		Rebuilding:         ix.get().mode == modeRebuilding,
		Upkeep:             ix.up.describe(),
		Queries:            m.queries.Load(),
		LookupsAvoided:     m.avoided.Load(),
		ConfirmedPositives: m.confirmed.Load(),
		FalsePositives:     m.falsePos.Load(),
		BypassLookups:      m.bypass.Load(),
		InvalidKeys:        m.invalid.Load(),
		CaughtUp:           m.caughtUp.Load(),
		SkippedKeys:        m.skipped.Load(),
		Reattached:         m.reattached.Load(),
		Dropped:            m.drops.Load(),
		Refills:            m.refills.Load(),
		TargetFPR:          ix.cfg.FPR,
	}
	if b := ix.bound.Load(); b != nil && b.src != nil {
		st.Attached = b.src.Logged
	}
	if s := ix.filter(); s != nil {
		fs := s.f.Stats()
		st.Serving = true
		st.Generation = s.at.gen()
		st.Items, st.EstimatedItems, st.Capacity = fs.Distinct, fs.EstimatedItems, s.capacity
		st.FillRatio, st.EstimatedFPR = fs.FillRatio, fs.EstimatedFPR
		st.RebuildDue = fs.EstimatedFPR > ix.cfg.FPR*ix.cfg.AutoRebuild.Factor
		st.Attached = true
	}
	targetErr := ix.targetError()
	m.mu.Lock()
	st.Rebuilds, st.LastRebuild, st.LastRebuildIn, st.LastBypass, st.LastReason = m.rebuilds, m.lastRebuild, m.lastTook, m.lastBypass, m.lastWhy
	st.AutoRebuilds, st.AutoReason, st.AutoTime = m.autos, m.autoReason, m.autoTotal
	st.LastError, st.CatchUpError, st.SnapshotError = m.lastErr, m.catchUpErr, errors.Join(targetErr, m.snapErr)
	if m.window[0] > 0 {
		st.MeasuredFPR = float64(m.window[1]) / float64(m.window[0])
	}
	m.mu.Unlock()
	return st
}

// describe names the jobs pending (Stats.Upkeep).
func (u *upkeep) describe() string {
	out := ""
	for k, name := range [jobKinds]string{"load", "refill", "rebuild"} {
		if u.jobs[k].Busy() {
			if out != "" {
				out += "+"
			}
			out += name
		}
	}
	return out
}
