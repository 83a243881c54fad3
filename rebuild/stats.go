package rebuild

import "time"

// Stats are the index's measures. Every key asked lands in exactly one of
// LookupsAvoided, ConfirmedPositives, FalsePositives, BypassLookups and
// InvalidKeys; their sum is Queries once the calls in progress returned.
type Stats struct {
	Serving  bool   // a filter answers; false: every key goes to SQLite
	Attached bool   // the source's triggers are in place
	Upkeep   string // background work asked for and not done ("load", "rebuild", ...), a load or first scan waiting for the index's first call or a Wait too

	Queries            uint64 // keys asked about
	LookupsAvoided     uint64 // answered "not fetched" by the filter alone
	ConfirmedPositives uint64 // maybes SQLite confirmed
	FalsePositives     uint64 // maybes SQLite refuted
	BypassLookups      uint64 // answered by SQLite without the filter's word
	InvalidKeys        uint64 // keys that could not be compared
	Dropped            uint64 // filters dropped because the source changed under them

	Generation   uint64  // the log generation the filter covers
	Items        uint64  // keys in the filter
	Capacity     uint64  // keys it was sized for
	EstimatedFPR float64 // from its bits as they stand
	RebuildDue   bool    // EstimatedFPR above FPR × RebuildFactor

	Rebuilds    uint64
	LastRebuild time.Time
}

// Stats returns the counters and, when a filter serves, its health (a
// scan of its bits: about a millisecond per 10 MiB).
func (ix *Index) Stats() Stats {
	g, cnt := ix.k.G, ix.k.Counts()
	st := Stats{
		Upkeep:             ix.k.Upkeep(),
		Queries:            g.C.Queries.Load(),
		LookupsAvoided:     g.C.Avoided.Load(),
		ConfirmedPositives: g.C.Confirmed.Load(),
		FalsePositives:     g.C.FalsePos.Load(),
		BypassLookups:      g.C.Bypassed.Load(),
		InvalidKeys:        g.C.Invalid.Load(),
		Dropped:            g.C.Dropped.Load(),
		Rebuilds:           cnt.Rebuilds,
		LastRebuild:        cnt.LastBuilt,
	}
	if src := g.Binding(); src != nil {
		st.Attached = src.Logged
	}
	if v := g.Serving(); v != nil {
		fs := v.F.Stats()
		st.Serving, st.Attached = true, true
		st.Generation = v.Mark().Gen
		st.Items, st.Capacity, st.EstimatedFPR = fs.Distinct, v.Capacity, fs.EstimatedFPR
		st.RebuildDue = ix.k.Due(fs.EstimatedFPR)
	}
	return st
}
