package rebuild

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// metrics are the index's counters. The atomics are bumped on the query
// path; mu guards the rest.
type metrics struct {
	queries    atomic.Uint64 // keys asked about
	negatives  atomic.Uint64 // answered "not fetched" by the filter alone
	confirmed  atomic.Uint64 // maybes SQLite confirmed
	falsePos   atomic.Uint64 // maybes SQLite refuted
	bypass     atomic.Uint64 // keys answered by SQLite while no filter served
	skipped    atomic.Uint64 // stored keys that are not valid UTF-8 or too long
	caughtUp   atomic.Uint64 // log entries applied by catch-up
	loads      atomic.Uint64 // snapshots loaded
	reattached atomic.Uint64 // attaches after the source's triggers were lost
	drops      atomic.Uint64 // filters dropped (source changed, log compacted past them)

	started time.Time

	mu          sync.Mutex
	rebuilds    uint64
	lastRebuild time.Time
	lastTook    time.Duration
	lastBypass  time.Duration
	lastWhy     string
	lastScan    ScanCounts // of the last successful scan
	autos       uint64     // automatic rebuilds asked for
	autoReason  string     // why the last one was asked for
	autoTook    time.Duration
	autoEnded   time.Time
	autoTotal   time.Duration // time spent in automatic rebuilds
	lastErr     error         // of the last rebuild, or of a catch-up that forced one
	snapErr     error         // why the snapshot is not used or saved
	window      [2]uint64     // recent keys asked of a serving filter, and how many of its maybes SQLite refuted
}

// windowKeys is about how many recent keys the measured false-positive
// rate covers: the window's counts are halved when they pass twice this.
const windowKeys = 1 << 16

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

func (m *metrics) lastScanCounts() ScanCounts {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastScan
}

// rebuildDone records a rebuild that published its filter: from start,
// and how long the collection was in bypass (the scan).
func (m *metrics) rebuildDone(start time.Time, bypass time.Duration, why string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastErr = err
	took := time.Since(start)
	m.rebuilds++
	m.lastRebuild, m.lastTook, m.lastWhy, m.lastBypass = time.Now(), took, why, bypass
	if strings.HasPrefix(why, autoPrefix) {
		m.autoTook, m.autoEnded = bypass, m.lastRebuild
		m.autoTotal += took
	}
}

func (m *metrics) rebuildFailed(err error) { m.setError(err) }

// lastAuto returns how long the last automatic rebuild kept the
// collection in bypass and when its filter started serving (zero if none
// did).
func (m *metrics) lastAuto() (took time.Duration, ended time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.autoTook, m.autoEnded
}

func (m *metrics) autoStarted(reason string) {
	m.mu.Lock()
	m.autos++
	m.autoReason = reason
	m.mu.Unlock()
}

// confirmedPage counts a page's maybes: asked of SQLite, confirmed of them.
func (m *metrics) confirmedPage(maybes, confirmed uint64) {
	m.confirmed.Add(confirmed)
	m.falsePos.Add(maybes - confirmed)
}

// served counts keys a serving filter answered and how many of its maybes
// SQLite refuted, in the window of the measured false-positive rate.
func (m *metrics) served(keys, refuted uint64) {
	m.mu.Lock()
	m.window[0] += keys
	m.window[1] += refuted
	if m.window[0] > 2*windowKeys {
		m.window[0] /= 2
		m.window[1] /= 2
	}
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
	Attached   bool // the database records the source and its triggers are in place

	Queries            uint64 // keys asked about (Fetched and Missing)
	DefiniteNegatives  uint64 // answered "not fetched" by the filter alone
	LookupsAvoided     uint64 // SQLite lookups saved: the definite negatives
	ConfirmedPositives uint64 // filter maybes that SQLite confirmed
	FalsePositives     uint64 // filter maybes that SQLite refuted
	BypassLookups      uint64 // keys answered by SQLite because no filter served
	CaughtUp           uint64 // log entries inserted by catch-up
	SkippedKeys        uint64 // stored keys that are not valid UTF-8: no query can name them
	Reattached         uint64 // times the source was attached again after its triggers were lost
	Dropped            uint64 // filters dropped because the source changed under them

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
	SnapshotError error         // why the snapshot was not used at open, and why it may not be saved (ErrUnsafeTarget); nil if neither
}

// Stats returns the counters and, when a filter serves, its health (a scan
// of its bits: about a millisecond per 10 MiB).
func (ix *Index) Stats() Stats {
	m := &ix.m
	st := Stats{
		Rebuilding:         ix.get().mode == modeRebuilding,
		Queries:            m.queries.Load(),
		DefiniteNegatives:  m.negatives.Load(),
		LookupsAvoided:     m.negatives.Load(),
		ConfirmedPositives: m.confirmed.Load(),
		FalsePositives:     m.falsePos.Load(),
		BypassLookups:      m.bypass.Load(),
		CaughtUp:           m.caughtUp.Load(),
		SkippedKeys:        m.skipped.Load(),
		Reattached:         m.reattached.Load(),
		Dropped:            m.drops.Load(),
		TargetFPR:          ix.cfg.FPR,
	}
	if b := ix.bound.Load(); b != nil && b.src != nil {
		st.Attached = b.src.Logged
	}
	if s := ix.filter(); s != nil {
		fs := s.f.Stats()
		st.Serving = true
		st.Generation = s.gen.Load()
		st.Items, st.EstimatedItems, st.Capacity = fs.Distinct, fs.EstimatedItems, s.capacity
		st.FillRatio, st.EstimatedFPR = fs.FillRatio, fs.EstimatedFPR
		st.RebuildDue = fs.EstimatedFPR > ix.cfg.FPR*ix.cfg.AutoRebuild.Factor
		st.Attached = true
	}
	m.mu.Lock()
	st.Rebuilds, st.LastRebuild, st.LastRebuildIn, st.LastBypass, st.LastReason = m.rebuilds, m.lastRebuild, m.lastTook, m.lastBypass, m.lastWhy
	st.AutoRebuilds, st.AutoReason, st.AutoTime = m.autos, m.autoReason, m.autoTotal
	st.LastError, st.SnapshotError = m.lastErr, errors.Join(ix.targetError(), m.snapErr)
	if m.window[0] > 0 {
		st.MeasuredFPR = float64(m.window[1]) / float64(m.window[0])
	}
	m.mu.Unlock()
	return st
}

// DatasetID returns the random id the database gave the source when it
// was first attached (snapshots carry it); attached is false for a
// read-only index on a source never attached.
func (ix *Index) DatasetID() (id [16]byte, attached bool) {
	if src := ix.source(); src != nil && src.Row {
		return src.DatasetID, true
	}
	return id, false
}

// source returns the source as the index last knew it: the serving
// filter's, the one it holds, or the one last resolved.
func (ix *Index) source() *store.Source {
	if s := ix.filter(); s != nil {
		return s.src
	}
	if h := ix.holding.Load(); h != nil {
		return h.src
	}
	if b := ix.bound.Load(); b != nil {
		return b.src
	}
	return nil
}
