package rebuild

import (
	"sync"
	"sync/atomic"
	"time"
)

// metrics are the index's counters. The atomics are bumped on the query
// path; mu guards the rest.
type metrics struct {
	queries   atomic.Uint64 // keys asked about
	negatives atomic.Uint64 // answered "not fetched" by the filter alone
	confirmed atomic.Uint64 // maybes SQLite confirmed
	falsePos  atomic.Uint64 // maybes SQLite refuted
	bypass    atomic.Uint64 // keys answered by SQLite while no filter served
	skipped   atomic.Uint64 // stored keys that are not valid UTF-8
	caughtUp  atomic.Uint64 // log entries applied by catch-up
	loads     atomic.Uint64 // snapshots loaded

	started time.Time

	mu          sync.Mutex
	rebuilds    uint64
	lastRebuild time.Time
	lastTook    time.Duration
	lastScan    ScanCounts // of the last successful scan
	autos       uint64     // automatic rebuilds started
	autoReason  string     // why the last one started
	lastErr     error      // of the last rebuild, or of a catch-up that forced one
	snapErr     error      // why the snapshot was not used at Open
}

// ScanCounts are what one full scan of the source found.
type ScanCounts struct {
	Rows        int64 // rows of the table
	Keys        int64 // keys inserted into the filter
	SkippedText int64 // text ids skipped: not valid UTF-8, or longer than MaxKeyBytes
	SkippedBlob int64 // ids stored as BLOB (never equal to a text id)
	SkippedNull int64 // rows whose id is NULL
}

func (m *metrics) scanned(c ScanCounts) {
	m.mu.Lock()
	m.lastScan = c
	m.mu.Unlock()
}

func (m *metrics) rebuildDone(start time.Time, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastErr = err
	if err == nil {
		m.rebuilds++
		m.lastRebuild, m.lastTook = time.Now(), time.Since(start)
	}
}

func (m *metrics) autoStarted(reason string) {
	m.mu.Lock()
	m.autos++
	m.autoReason = reason
	m.mu.Unlock()
}

func (m *metrics) setError(err error) {
	m.mu.Lock()
	m.lastErr = err
	m.mu.Unlock()
}

func (m *metrics) setSnapshotError(err error) {
	m.mu.Lock()
	m.snapErr = err
	m.mu.Unlock()
}

func (m *metrics) lastRebuildError() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastErr
}

// Stats are the measures of the index's effectiveness and health.
type Stats struct {
	Serving    bool // a filter answers; false: bypass, every query goes to SQLite
	Rebuilding bool
	Attached   bool // the database records the source (log, triggers); false only for a read-only index

	Queries            uint64 // keys asked about (Fetched and Missing)
	DefiniteNegatives  uint64 // answered "not fetched" by the filter alone
	LookupsAvoided     uint64 // SQLite lookups saved: the definite negatives
	ConfirmedPositives uint64 // filter maybes that SQLite confirmed
	FalsePositives     uint64 // filter maybes that SQLite refuted
	BypassLookups      uint64 // keys answered by SQLite because no filter served
	CaughtUp           uint64 // log entries inserted by catch-up
	FreshnessQueries   uint64 // generation checks that ran the query (something committed, or no WAL)
	FreshnessFast      uint64 // generation checks answered by the wal-index header alone
	SkippedKeys        uint64 // stored keys that are not valid UTF-8: no query can name them

	Generation     uint64  // the log generation the filter covers
	Items          uint64  // keys inserted into the filter, each once (a key marked by Update and then caught up from the log counts once)
	EstimatedItems float64 // distinct keys, estimated from its bits
	Capacity       uint64  // keys the filter was sized for
	FillRatio      float64
	EstimatedFPR   float64 // from the bits as they stand
	TargetFPR      float64
	RebuildDue     bool // EstimatedFPR > TargetFPR × RebuildFactor

	Rebuilds      uint64
	AutoRebuilds  uint64 // rebuilds the index started because the filter was due (see Config.NoAutoRebuild)
	AutoReason    string // why the last automatic rebuild started
	LastRebuild   time.Time
	LastRebuildIn time.Duration
	LastError     error // of the last rebuild (or forced rebuild), nil if it succeeded
	SnapshotError error // why the snapshot was not used at Open, nil if it was
}

// Stats returns the counters and, when a filter serves, its health (a scan
// of its bits: about a millisecond per 10 MiB).
func (ix *Index) Stats() Stats {
	m := &ix.m
	st := Stats{
		Rebuilding:         ix.get().mode == modeRebuilding,
		Attached:           ix.st.attached,
		Queries:            m.queries.Load(),
		DefiniteNegatives:  m.negatives.Load(),
		LookupsAvoided:     m.negatives.Load(),
		ConfirmedPositives: m.confirmed.Load(),
		FalsePositives:     m.falsePos.Load(),
		BypassLookups:      m.bypass.Load(),
		CaughtUp:           m.caughtUp.Load(),
		FreshnessQueries:   ix.st.gen.exacts.Load(),
		FreshnessFast:      ix.st.gen.fast.Load(),
		SkippedKeys:        m.skipped.Load(),
		TargetFPR:          ix.cfg.FPR,
	}
	if s := ix.filter(); s != nil {
		fs := s.f.Stats()
		st.Serving = true
		st.Generation = s.gen.Load()
		st.Items, st.EstimatedItems, st.Capacity = fs.Distinct, fs.EstimatedItems, s.capacity
		st.FillRatio, st.EstimatedFPR = fs.FillRatio, fs.EstimatedFPR
		st.RebuildDue = fs.EstimatedFPR > ix.cfg.FPR*ix.cfg.RebuildFactor
	}
	m.mu.Lock()
	st.Rebuilds, st.LastRebuild, st.LastRebuildIn = m.rebuilds, m.lastRebuild, m.lastTook
	st.AutoRebuilds, st.AutoReason = m.autos, m.autoReason
	st.LastError, st.SnapshotError = m.lastErr, m.snapErr
	m.mu.Unlock()
	return st
}

// DatasetID returns the random id the database gave the source when it
// was first attached (snapshots carry it); attached is false for a
// read-only index on a source never attached.
func (ix *Index) DatasetID() (id [16]byte, attached bool) {
	return ix.st.datasetID, ix.st.attached
}
