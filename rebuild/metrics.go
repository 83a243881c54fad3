package rebuild

import (
	"sync"
	"sync/atomic"
	"time"
)

// metrics are the index's counters. The atomics are bumped on the query
// path; mu guards the rest and is taken after no other lock.
type metrics struct {
	queries    atomic.Uint64 // keys asked about
	avoided    atomic.Uint64 // answered "not fetched" by the filter alone
	confirmed  atomic.Uint64 // maybes SQLite confirmed
	falsePos   atomic.Uint64 // maybes SQLite refuted
	bypass     atomic.Uint64 // keys answered by SQLite without the filter's word
	invalid    atomic.Uint64 // keys that could not be compared
	skipped    atomic.Uint64 // stored keys that are not valid UTF-8 or too long
	caughtUp   atomic.Uint64 // log entries applied by catch-up
	loads      atomic.Uint64 // snapshots loaded
	reattached atomic.Uint64 // attaches after the source's triggers were lost
	drops      atomic.Uint64 // filters dropped (source changed, log compacted past them)
	refills    atomic.Uint64 // filters read again after a restore in place

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
	catchUpErr  error         // of the follower's last catch-up, if it failed
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
	SkippedText int64 // text ids skipped: not valid UTF-8, or too long to stand for a key of MaxKeyBytes
	SkippedBlob int64 // ids stored as BLOB (never equal to a text id)
	SkippedNull int64 // rows whose id is NULL
}

// count records a call's answers: by[i] says what answered key i
// (answer.go), found[i] whether it was found (nil: none was asked).
// Every key lands in exactly one counter.
func (m *metrics) count(by []uint8, found []bool) {
	var avoided, confirmed, refuted, bypass uint64
	for i, b := range by {
		switch {
		case b == byFilter:
			avoided++
		case b == byMaybe && found[i]:
			confirmed++
		case b == byMaybe:
			refuted++
		default:
			bypass++
		}
	}
	m.avoided.Add(avoided)
	m.confirmed.Add(confirmed)
	m.falsePos.Add(refuted)
	m.bypass.Add(bypass)
	if n := avoided + confirmed + refuted; n > 0 {
		m.mu.Lock()
		m.window[0] += n
		m.window[1] += refuted
		if m.window[0] > 2*windowKeys {
			m.window[0] /= 2
			m.window[1] /= 2
		}
		m.mu.Unlock()
	}
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
func (m *metrics) rebuildDone(start time.Time, bypass time.Duration, why reason) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastErr = nil
	took := time.Since(start)
	m.rebuilds++
	m.lastRebuild, m.lastTook, m.lastWhy, m.lastBypass = time.Now(), took, why.text, bypass
	if why.auto {
		m.autoTook, m.autoEnded = bypass, m.lastRebuild
		m.autoTotal += took
	}
}

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

func (m *metrics) setError(err error) {
	m.mu.Lock()
	m.lastErr = err
	m.mu.Unlock()
}

func (m *metrics) setCatchUpError(err error) {
	m.mu.Lock()
	m.catchUpErr = err
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
