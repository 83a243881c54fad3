package rebuild

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/gate"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/rebuild/internal/upkeep"
	"github.com/syncfilter/syncfilter/snapshot"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// DBConfig says which database to open and how. Zero values take the
// documented defaults; docs/INTEGRATION.md explains each choice.
type DBConfig struct {
	// Path of the SQLite database file, resolved once at open. Required.
	Path string

	// Driver is the SQLite driver the app opens this database with (nil:
	// github.com/mattn/go-sqlite3): the library opens its own connections
	// through it, so that the process holds one copy of SQLite.
	Driver driver.Driver

	// DB is the app's own handle on this database (optional): its driver
	// is taken, and a call's keys are confirmed on its pool while the app
	// uses none of its connections (no transaction or *sql.Conn held, no
	// statement running) and one is idle. Never a pool opened with
	// cache=shared.
	DB *sql.DB

	// ReadOnly opens the database read-only: nothing is created, written
	// or saved.
	ReadOnly bool

	// Readers is how many connections the collections share for reading.
	// Default min(4, max(2, GOMAXPROCS)).
	Readers int

	// BusyTimeout is how long SQLite waits for a lock on the library's
	// own connections. Default 5s.
	BusyTimeout time.Duration

	// ConnParams are URI parameters added to each connection the library
	// opens: an encrypting VFS and its key (vfs=adiantum&hexkey=…). Never
	// logged, written or shown in errors; the library's own are refused.
	ConnParams url.Values

	// Logger receives the background's events: snapshots refused,
	// rebuilds, filters dropped, saves that failed. nil: none.
	Logger *slog.Logger

	knobs knobs // what tests and the ablation benchmark set (zero: production)
}

// Source says which table of the database is the source of truth of one
// collection, where its filter persists and how to size and keep it.
// Zero values take the documented defaults.
type Source struct {
	// Table and Column name the source of truth: one row per fetched
	// record, its id in Column (TEXT, BINARY collation, stored, indexed).
	// Both empty: the library owns a table, filled by MarkFetched.
	Table, Column string

	// Compare says which ids are one record, as the server compares
	// them: syncfilter.CompareCanonical (zero, the default) takes ids
	// equal after NFC as one; syncfilter.CompareBytes only equal bytes
	// (opaque ids, file paths, user-chosen names). The database records
	// it at the first attach: opening the source in the other mode is
	// ErrBadConfig.
	Compare syncfilter.Compare

	// Version names the column holding each record's version, for Need:
	// INTEGER, or TEXT compared byte for byte, so of one fixed width (a
	// UTC time with a fixed number of fraction digits, a zero-padded
	// counter, a ULID: time.RFC3339Nano trims zeros and does not sort);
	// stored, BINARY collation. Checked at open like Column; one a
	// migration breaks later fails Need alone. Empty: none.
	Version string

	// Snapshot is the file the filter is saved to and loaded from.
	// Empty: the filter lives in memory only.
	Snapshot string

	// FPR is the target false-positive rate. Default 0.01.
	FPR float64

	// Capacity is the least number of keys a rebuilt filter is sized for.
	Capacity uint64

	// Headroom multiplies the row count when sizing. Default 2; at least 1.
	Headroom float64

	// LogRetain is how many log entries a rebuild keeps behind the
	// snapshot it saved, for other processes. Default 100,000.
	LogRetain uint64

	// AllowUnindexed accepts a key column without an index.
	AllowUnindexed bool

	// SnapshotMode is the permission of snapshot files. Default 0600.
	SnapshotMode os.FileMode

	// ReplaceForeignFile lets saves replace a file at Snapshot that is not
	// this source's snapshot (never the database's own files).
	ReplaceForeignFile bool

	// NoSaveOnClose: Close leaves the snapshot file alone.
	NoSaveOnClose bool

	// NoAutoRebuild: the index rebuilds only when the app calls Rebuild,
	// not when no filter can serve nor when the filter is due (see
	// docs/INTEGRATION.md, "Rebuilds and sizing").
	NoAutoRebuild bool
	NotWhenDue    bool          // no automatic rebuild when the filter is due (only when none serves)
	RebuildFactor float64       // due when the estimated FPR exceeds FPR × this (default 2)
	RebuildEvery  time.Duration // the least time between two automatic rebuilds

	// Progress, if set, is told how far a scan got (keys read, rows),
	// every ProgressEvery keys and at the end, asynchronously: it must
	// not wait on the index (docs/INTEGRATION.md, "Progress").
	Progress      func(done, total int64)
	ProgressEvery int64 // default 10,000
}

// knobs are what tests and the ablation benchmark set on one database
// (pebble's Options.private): nothing reaches another database.
type knobs struct {
	store        store.Knobs
	scanRow      func(n int64) error // a scan's start (0) and each chunk: an error fails it
	beforeCount  func() error        // before a rebuild's count: an error is the count's
	catchUpChunk func()              // after every chunk a catch-up reads
	spellingScan func()              // a read of the table's stored spellings starts
	afterProbe   func()              // a call's probe returned
	catalogRead  func(onApp bool)    // a catalog read after DDL, on the app's pool or a reader
	walk         func()              // a call lists every spelling of its keys
	followPoll   func()              // the follower looks at its state
	followMin    time.Duration       // the follower's shortest window after a call
	appQueued    func()              // an app's call queued its job for the worker
	published    func()              // a rebuild published its filter
	now          func() time.Time    // snapshot headers and automatic rebuilds (nil: time.Now)
	retryFirst   time.Duration       // the first wait before a failed background rebuild is tried again
	noFollow     bool                // no catch-up between calls
	behind       bool                // calls never take log entries in
	inline       bool                // calls take every log entry they lack

	// The speed mechanisms, each switched off by the ablation benchmark
	// (ablate.go, docs/BENCHMARKS.md).
	noAppPool, noDeferredLoad, noDeferredRepair, noLookup, noPrepare, noCatalog, noWalk bool
}

func (k knobs) gate() gate.Knobs {
	return gate.Knobs{NoAppPool: k.noAppPool, NoLookup: k.noLookup, NoPrepare: k.noPrepare, NoCatalog: k.noCatalog, NoWalk: k.noWalk, Behind: k.behind, Inline: k.inline,
		SpellScan: k.spellingScan, AfterProbe: k.afterProbe, CatchUpChunk: k.catchUpChunk, CatalogRead: k.catalogRead, Walk: k.walk}
}

func (k knobs) upkeep() upkeep.Knobs {
	return upkeep.Knobs{NoFollow: k.noFollow, NoDeferredLoad: k.noDeferredLoad, NoDeferredRepair: k.noDeferredRepair, ScanRow: k.scanRow, BeforeCount: k.beforeCount,
		Published: k.published, FollowPoll: k.followPoll, FollowMin: k.followMin, AppQueued: k.appQueued, Now: k.now, RetryFirst: k.retryFirst}
}

func bad(format string, args ...any) error {
	return fmt.Errorf("check config: "+format+": %w", append(args, ErrBadConfig)...)
}

// driver is the driver the library opens the database with: Driver, or
// the driver of the app's DB; given both, they must be of one type.
func (c DBConfig) driver() (driver.Driver, error) {
	if c.DB == nil {
		return c.Driver, nil
	}
	d := c.DB.Driver()
	if c.Driver != nil && reflect.TypeOf(c.Driver) != reflect.TypeOf(d) {
		return nil, bad("DBConfig.Driver is %T and DBConfig.DB's driver %T: give the driver once (DBConfig.DB alone takes its driver)", c.Driver, d)
	}
	return d, nil
}

func (c DBConfig) withDefaults() (DBConfig, error) {
	if c.Path == "" {
		return c, bad("no database path")
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = 5 * time.Second
	}
	if c.Readers == 0 {
		c.Readers = min(4, max(2, runtime.GOMAXPROCS(0)))
	}
	switch {
	case c.BusyTimeout < 0:
		return c, bad("busy timeout %v", c.BusyTimeout)
	case c.Readers < 1:
		return c, bad("readers %d", c.Readers)
	}
	if err := store.CheckParams(c.ConnParams); err != nil {
		return c, err
	}
	if c.ConnParams != nil { // the app's map may change after OpenDB
		q := make(url.Values, len(c.ConnParams))
		for k, v := range c.ConnParams {
			q[k] = slices.Clone(v)
		}
		c.ConnParams = q
	}
	return c, nil
}

// withDefaults checks s and fills in its defaults; a read-only database
// implies no saves and no rebuilds.
func (s Source) withDefaults(readOnly bool) (Source, error) {
	if (s.Table == "") != (s.Column == "") {
		return s, bad("table %q and column %q: give both or neither", s.Table, s.Column)
	}
	if s.Table != "" {
		if err := store.CheckName("table", s.Table); err != nil {
			return s, err
		}
		if err := store.CheckName("column", s.Column); err != nil {
			return s, err
		}
	}
	switch {
	case s.Version != "" && s.Table == "":
		return s, bad("version column %q: the library's own table holds no versions", s.Version)
	case s.Version != "":
		if err := store.CheckName("version column", s.Version); err != nil {
			return s, err
		}
	}
	if s.Snapshot != "" {
		var err error
		if s.Snapshot, err = filepath.Abs(s.Snapshot); err != nil {
			return s, bad("snapshot path %q: %v", s.Snapshot, err)
		}
	}
	if readOnly {
		s.NoSaveOnClose, s.NoAutoRebuild = true, true
	}
	if s.SnapshotMode == 0 {
		s.SnapshotMode = snapshot.FileMode
	}
	if s.FPR == 0 {
		s.FPR = 0.01
	}
	if s.Headroom == 0 {
		s.Headroom = 2
	}
	if s.RebuildFactor == 0 {
		s.RebuildFactor = 2
	}
	if s.LogRetain == 0 {
		s.LogRetain = 100_000
	}
	if s.ProgressEvery <= 0 {
		s.ProgressEvery = 10_000
	}
	switch {
	case s.SnapshotMode&^os.ModePerm != 0 || s.SnapshotMode&0o600 != 0o600:
		return s, bad("snapshot mode %v: want a permission the owner can read and write", s.SnapshotMode)
	case !(s.FPR > 0 && s.FPR < 1):
		return s, bad("false-positive rate %v not in (0, 1)", s.FPR)
	case !(s.Headroom >= 1) || math.IsInf(s.Headroom, 0):
		return s, bad("headroom %v below 1", s.Headroom)
	case !(s.RebuildFactor >= 1) || math.IsInf(s.RebuildFactor, 0):
		return s, bad("rebuild factor %v below 1", s.RebuildFactor)
	case s.RebuildEvery < 0:
		return s, bad("rebuild interval %v", s.RebuildEvery)
	case s.Compare.Policy() == "":
		return s, bad("unknown %v", s.Compare)
	}
	return s, nil
}

// upkeep returns the keeper's configuration of s (defaults filled in).
func (s Source) upkeep() upkeep.Config {
	return upkeep.Config{Snapshot: s.Snapshot, FPR: s.FPR, Capacity: s.Capacity, Headroom: s.Headroom, LogRetain: s.LogRetain,
		SnapshotMode: s.SnapshotMode, ReplaceForeignFile: s.ReplaceForeignFile, NoSaveOnClose: s.NoSaveOnClose,
		NoAutoRebuild: s.NoAutoRebuild, NotWhenDue: s.NotWhenDue, RebuildFactor: s.RebuildFactor,
		RebuildEvery: s.RebuildEvery, Progress: s.Progress, ProgressEvery: s.ProgressEvery}
}

// gate returns the gate's configuration of s.
func (s Source) gate(readOnly bool, k knobs) gate.Config {
	return gate.Config{Table: s.Table, Column: s.Column, AllowUnindexed: s.AllowUnindexed, ReadOnly: readOnly, Compare: s.Compare, Version: s.Version, Knobs: k.gate()}
}
