package rebuild

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"time"

	"github.com/syncfilter/syncfilter/snapshot"
)

// Config says where the source of truth is and how to size and keep the
// filter. Zero values take the documented defaults.
type Config struct {
	// Path of the SQLite database file. Required.
	Path string

	// Table and Column name the source of truth: one row per fetched
	// record, the record id in Column. Column must be indexed (see
	// AllowUnindexed). Leave both empty to let the library own a table,
	// syncfilter_fetched(key TEXT PRIMARY KEY), filled by MarkFetched.
	Table, Column string

	// Snapshot is the file the filter is saved to and loaded from. Empty:
	// the filter lives in memory only and is rebuilt by every Open.
	Snapshot string

	// FPR is the target false-positive rate. Default 0.01.
	FPR float64

	// Capacity is the least number of keys a rebuilt filter is sized for.
	// Default 0: rows × Headroom, at least 1024.
	Capacity uint64

	// Headroom multiplies the row count when sizing, leaving room for
	// keys added until the next rebuild. Default 2; at least 1.
	Headroom float64

	// RebuildFactor: Stats.RebuildDue is set when the estimated
	// false-positive rate exceeds FPR × RebuildFactor. Default 2.
	RebuildFactor float64

	// LogRetain is how many log entries a rebuild keeps behind the
	// generation it saved, for other processes whose filters are older.
	// Default 100,000.
	LogRetain uint64

	// AllowUnindexed accepts a key column without an index; every
	// confirmation then scans the table.
	AllowUnindexed bool

	// ReadOnly opens the database read-only and changes nothing in it or
	// on disk: no tables, triggers or journal-mode change, no snapshot
	// saved, no rebuild. A source the library attached before is served
	// from its snapshot (verified and caught up in memory) or, without
	// one, from SQLite alone; a source never attached is answered from
	// SQLite alone (Stats.Attached is false), canonically equivalent
	// stored spellings included. Update, MarkFetched, Rebuild and Save
	// return ErrReadOnly. This is what `syncfilter check` uses.
	ReadOnly bool

	// SnapshotMode is the permission of snapshot files written. Default
	// 0600 (snapshot.FileMode): only the writer's user reads it, which
	// suits an app writing its own file. When the cron job runs as
	// another user than the app, give the app read access (0640 with a
	// shared group, or 0644): an app that cannot read the file serves
	// from SQLite and rebuilds at every Open. The hash key in the file is
	// a secret only if adversaries choose record ids.
	SnapshotMode os.FileMode

	// ReplaceForeignFile lets snapshot saves replace an existing file that
	// is not a snapshot, or the snapshot of another dataset (by default
	// refused with ErrUnsafeTarget, before anything is scanned). The
	// database and its -wal, -shm and -journal files are never replaced.
	ReplaceForeignFile bool

	// NoSaveOnClose: Close leaves the snapshot file alone (by default it
	// saves the filter when it covers more than the file).
	NoSaveOnClose bool

	// NoAutoRebuild: never rebuild because the filter filled up; the app
	// watches Stats.RebuildDue and calls Rebuild itself (or runs the cron
	// job). By default, when the estimated false-positive rate exceeds
	// FPR × RebuildFactor, the index rebuilds in the background by itself
	// (every query goes to SQLite meanwhile), sized for the rows then.
	NoAutoRebuild bool

	// AutoRebuildEvery is the least time between two automatic rebuilds.
	// Default 1 minute.
	AutoRebuildEvery time.Duration

	// NoBackgroundRebuild: when the snapshot is missing or refused, serve
	// every query from SQLite until the caller runs Rebuild, instead of
	// rebuilding in the background.
	NoBackgroundRebuild bool

	// Progress, if set, is called during scans with the rows done so far
	// and the total (counted at the start of the scan), from the scanning
	// goroutine, at most every ProgressEvery rows and once at the end.
	Progress func(done, total int64)

	// ProgressEvery: rows between Progress calls. Default 10,000.
	ProgressEvery int64

	// BusyTimeout is how long SQLite waits for a lock. Default 5s.
	BusyTimeout time.Duration

	// Readers is the size of the reading connection pool. Default
	// GOMAXPROCS, at least 2.
	Readers int
}

// withDefaults returns c with defaults filled in, or ErrBadConfig.
func (c Config) withDefaults() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("check config: "+format+": %w", append(args, ErrBadConfig)...)
	}
	if c.Path == "" {
		return bad("no database path")
	}
	if (c.Table == "") != (c.Column == "") {
		return bad("table %q and column %q: give both or neither", c.Table, c.Column)
	}
	if c.Table != "" {
		if err := checkName("table", c.Table); err != nil {
			return Config{}, err
		}
		if err := checkName("column", c.Column); err != nil {
			return Config{}, err
		}
	}
	if c.ReadOnly {
		c.NoSaveOnClose, c.NoBackgroundRebuild, c.NoAutoRebuild = true, true, true
	}
	if c.AutoRebuildEvery == 0 {
		c.AutoRebuildEvery = time.Minute
	}
	if c.AutoRebuildEvery < 0 {
		return bad("auto-rebuild interval %v", c.AutoRebuildEvery)
	}
	if c.SnapshotMode == 0 {
		c.SnapshotMode = snapshot.FileMode
	}
	if c.SnapshotMode&^os.ModePerm != 0 || c.SnapshotMode&0o600 != 0o600 {
		return bad("snapshot mode %v: want a permission the owner can read and write", c.SnapshotMode)
	}
	if c.FPR == 0 {
		c.FPR = 0.01
	}
	if !(c.FPR > 0 && c.FPR < 1) {
		return bad("false-positive rate %v not in (0, 1)", c.FPR)
	}
	if c.Headroom == 0 {
		c.Headroom = 2
	}
	if !(c.Headroom >= 1) || math.IsInf(c.Headroom, 0) {
		return bad("headroom %v below 1", c.Headroom)
	}
	if c.RebuildFactor == 0 {
		c.RebuildFactor = 2
	}
	if !(c.RebuildFactor >= 1) || math.IsInf(c.RebuildFactor, 0) {
		return bad("rebuild factor %v below 1", c.RebuildFactor)
	}
	if c.LogRetain == 0 {
		c.LogRetain = 100_000
	}
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = 10_000
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = 5 * time.Second
	}
	if c.BusyTimeout < 0 {
		return bad("busy timeout %v", c.BusyTimeout)
	}
	if c.Readers == 0 {
		c.Readers = max(2, runtime.GOMAXPROCS(0))
	}
	if c.Readers < 1 {
		return bad("readers %d", c.Readers)
	}
	return c, nil
}

// targetCheck is openStore's last check before attaching: the snapshot
// path must be a file the library may replace (see checkTarget).
func (c *Config) targetCheck(row sourceRow, attached bool) error {
	if c.Snapshot == "" || c.ReadOnly {
		return nil
	}
	return checkTarget(c.Snapshot, c.Path, row.datasetID, attached, c.ReplaceForeignFile)
}
