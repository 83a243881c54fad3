package rebuild

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math"
	"os"
	"reflect"
	"runtime"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/snapshot"
)

// DBConfig says which database to open and how. Zero values take the
// documented defaults.
type DBConfig struct {
	// Path of the SQLite database file. Required. It is resolved once, at
	// open (absolute, symbolic links followed): a later chdir or a new
	// link changes nothing the library opens, and every relative
	// Source.Snapshot is taken relative to the working directory at open.
	Path string

	// Driver is the SQLite driver the app opens this database with: the
	// library opens its own connections through it, so that the process
	// holds one copy of SQLite. Two copies in one process do not see each
	// other's file locks, and closing a file in one drops the other's:
	// committed rows vanish and the database is corrupted
	// (sqlite.org/howtocorrupt.html, 2.2.1). Pass &sqlite.Driver{}
	// (modernc.org/sqlite), &driver.SQLite{}
	// (github.com/ncruces/go-sqlite3/driver), &sqlite3.SQLiteDriver{}
	// (github.com/mattn/go-sqlite3), or appDB.Driver() of any *sql.DB the
	// app opened. nil: github.com/mattn/go-sqlite3, the default in builds
	// with cgo (and without the syncfilter_nomattn tag), unless the
	// program links another SQLite (ErrSecondSQLite); no default without
	// cgo (ErrNoDriver). Another driver: ErrUnsupportedDriver.
	Driver driver.Driver

	// DB is the app's own handle on this database (optional). The library
	// then takes its driver (DB.Driver(): Driver may stay nil; given both,
	// they must be of the same type) and runs the statements that confirm
	// a page's keys on its pool: a connection's page cache is dropped
	// whenever another connection commits, so the library's own readers
	// start cold after each of the app's commits, while the app's
	// connection that just committed is warm. Everything else runs on the
	// library's own connections. A call borrows a connection of the
	// app's pool only when one is idle, and never while suspended: when
	// the app holds them all (say in the transaction that calls Missing),
	// the library's own reader confirms. (database/sql cannot lend only
	// an idle connection: when the app takes the idle one between the
	// library's look and its statement, the pool opens another, as it
	// would for the app; rare, and within the app's own limit.)
	//
	// OpenDB checks that DB is a handle on the file at Path, with one
	// query on DB's pool (it waits for one of its connections): DB's
	// main database must be that very file (device and inode), not
	// another file, an in-memory or a temporary database
	// (ErrAppDBMismatch). The app may close DB before the library: from
	// then on the library confirms on its own connections.
	//
	// Do not hand over a pool opened with SQLite's shared cache
	// (cache=shared): its connections lock each other's tables, so the
	// library's reads there would make the app's own writes fail at once
	// with SQLITE_LOCKED ("database table is locked"). Hand over its
	// Driver instead (the library's own connections always have caches
	// of their own). The library cannot tell such a pool by looking; the
	// first table lock its own statements meet there sends them to its
	// own connections for good.
	DB *sql.DB

	// ReadOnly opens the database read-only and changes nothing in it or
	// on disk: no tables or triggers, no snapshot saved, no rebuild. A
	// source the library attached before is served from its snapshot
	// (verified and caught up in memory) or, without one, from SQLite
	// alone; a source never attached is answered from SQLite alone
	// (Stats.Attached is false), canonically equivalent stored spellings
	// included. MarkFetched, Rebuild and Save return ErrReadOnly. This is
	// what `syncfilter check` uses.
	ReadOnly bool

	// Readers is how many connections the collections of the database
	// share for reading (lookups, catch-up). A rebuild's scan and the
	// count beside it read on two more of their own. Default
	// min(4, max(2, GOMAXPROCS)).
	Readers int

	// BusyTimeout is how long SQLite waits for a lock on the library's
	// own connections. Default 5s. A statement the library runs on the
	// app's pool (DBConfig.DB) waits as the app's connections do, under
	// the app's own busy timeout.
	BusyTimeout time.Duration

	knobs knobs // what the tests shrink or hook (zero: production)
}

// knobs are the sizes and hooks tests set on one database (pebble's
// Options.private): nothing a test sets reaches another database, so
// tests run in parallel. The zero value is production.
type knobs struct {
	store store.Knobs // chunk sizes of the SQL layer

	scanRow      func(n int64) error // a scan's start (n = 0) and every chunk it reads: an error fails the scan as SQLite would
	quiet        func()              // a call answered without a probe (call.quiet)
	countWait    func()              // a rebuild's builder is about to wait for the count (its digests reached deferredRows)
	beforeCount  func() error        // before the count starts; an error is the count's
	catchUpChunk func()              // after every chunk a catch-up reads
	deferredRows int64               // digests a rebuild keeps while its count runs (0: 64 MiB of them)
	now          func() time.Time    // the clock of snapshot creation times (0: time.Now)
	noFollow     bool                // no catch-up between calls (the follower): calls and jobs alone catch up
	inline       bool                // a call takes in every log entry it lacks, whatever it costs
	behind       bool                // a call never takes log entries in: it confirms what the filter rules out
	spellingScan func()              // a scan of the table's keys for stored spellings starts
	followPoll   func()              // the follower looks at its state (every turn of its loop)
	published    func()              // a rebuild published its filter, before the database records the scan
	autoNow      func() time.Time    // the clock automatic rebuilds are spaced by (nil: time.Now)
	retryFirst   time.Duration       // the first wait before a failed background rebuild is tried again (0: retryFirst)

	// The speed mechanisms, each switched off for the ablation
	// benchmark (ablate.go, docs/BENCHMARKS.md).
	noAppPool      bool // confirmations never run on the app's pool
	noBudget       bool // a call takes in up to a chunk of log entries, whatever confirming would cost
	noDeferredLoad bool // the opening load starts at once, not after the first call
	noYield        bool // a rebuild's scan does not yield to the app's calls
	noQuiet        bool // a call whose keys the filter rules out always probes
	noLookup       bool // Fetched of an ASCII key probes as a page does
}

func (k knobs) clock() time.Time {
	if k.now != nil {
		return k.now()
	}
	return time.Now().UTC()
}

// autoClock is the time automatic rebuilds are spaced by.
func (k knobs) autoClock() time.Time {
	if k.autoNow != nil {
		return k.autoNow()
	}
	return time.Now()
}

// Source says which table of the database is the source of truth of one
// collection, where its filter persists and how to size and keep it.
// Zero values take the documented defaults.
type Source struct {
	// Table and Column name the source of truth: one row per fetched
	// record, the record id in Column (TEXT, BINARY collation, not
	// generated). Column must be indexed (see AllowUnindexed). Leave both
	// empty to let the library own a table, syncfilter_fetched(key TEXT
	// PRIMARY KEY), filled by MarkFetched.
	Table, Column string

	// Snapshot is the file the filter is saved to and loaded from. Empty:
	// the filter lives in memory only and is rebuilt by every open.
	Snapshot string

	// FPR is the target false-positive rate. Default 0.01.
	FPR float64

	// Capacity is the least number of keys a rebuilt filter is sized for.
	// Default 0: rows × Headroom (more while the source grows fast), at
	// least 1024.
	Capacity uint64

	// Headroom multiplies the row count when sizing, leaving room for
	// keys added until the next rebuild. Default 2; at least 1.
	Headroom float64

	// LogRetain is how many log entries a rebuild keeps behind the
	// generation it saved, for other processes whose filters are older.
	// Default 100,000.
	LogRetain uint64

	// AllowUnindexed accepts a key column without an index; every
	// confirmation then scans the table.
	AllowUnindexed bool

	// SnapshotMode is the permission of snapshot files written. Default
	// 0600 (snapshot.FileMode): only the writer's user reads it, which
	// suits an app writing its own file. When the cron job runs as
	// another user than the app, give the app read access (0640 with a
	// shared group, or 0644): an app that cannot read the file serves
	// from SQLite and rebuilds at every open. The hash key in the file is
	// a secret only if adversaries choose record ids.
	SnapshotMode os.FileMode

	// ReplaceForeignFile lets snapshot saves replace an existing file that
	// is not a snapshot, or the snapshot of another dataset (by default
	// they are not saved there: Stats.SnapshotError says why). The
	// database and its -wal, -shm and -journal files are never replaced.
	ReplaceForeignFile bool

	// NoSaveOnClose: Close leaves the snapshot file alone (by default it
	// saves the filter when it covers more than the file).
	NoSaveOnClose bool

	// AutoRebuild says when the index rebuilds its filter by itself.
	AutoRebuild AutoRebuild

	// Progress, if set, is called during scans with the keys read so far
	// and the rows (estimated, then counted), at most every ProgressEvery
	// keys and once at the end, from a goroutine of its own, with the
	// latest value (a slow callback skips values, never the last): the
	// scan never waits for it, so it may call any method of any index,
	// its own Close, Wait and Rebuild, another collection's methods and
	// the database's Suspend, Resume and Close included: each returns
	// (a rebuild of the same index waits for this one to end, which does
	// not wait for the callback). Calls made from a rebuild the callback
	// itself started run the callback too, concurrently with this one. A
	// Progress that panics while the scan runs stops the rebuild; one
	// that panics in the last call, after the scan, stops nothing. The
	// panic goes on in the caller of the call that ran the scan: Rebuild,
	// or DB.Index and Open, which scan an empty table (or the library's
	// own) before they return; a background rebuild records it in
	// Stats.LastError.
	Progress func(done, total int64)

	// ProgressEvery: keys between Progress calls. Default 10,000.
	ProgressEvery int64
}

// AutoRebuild says when an index rebuilds its filter by itself, on the
// database's worker, every query about the collection going to SQLite
// meanwhile (as for any rebuild). By default it rebuilds when no filter
// can serve (the snapshot is missing or refused, a filter was dropped
// because the source changed under it, the source's triggers were put
// back after a migration) and when the filter is due: its estimated
// false-positive rate exceeds FPR × Factor (Stats.RebuildDue), sized for
// the rows then and for the growth since the last rebuild.
type AutoRebuild struct {
	// Off: never rebuild by itself. While no filter serves, every query
	// goes to SQLite until the app calls Rebuild (or the cron job runs
	// and the app calls Reload); a full filter stays until then.
	Off bool

	// NotWhenDue: rebuild when no filter serves, but not because the
	// filter filled up; the app watches Stats.RebuildDue.
	NotWhenDue bool

	// Factor: the filter is due when its estimated false-positive rate
	// exceeds FPR × Factor. Default 2.
	Factor float64

	// Every is the least time between two rebuilds of a due filter, on
	// top of the limit tied to their cost (one starts only after nine
	// times the last one's scan has passed since it ended, so that
	// rebuilds take at most a tenth of the time). Default 0: the cost
	// limit alone.
	Every time.Duration
}

// whenDue reports whether the index rebuilds a due filter by itself.
func (a AutoRebuild) whenDue() bool { return !a.Off && !a.NotWhenDue }

// driver is the driver the library opens the database with: Driver, or
// the driver of the app's DB (nil: the default). Given both, they must be
// of one type (one SQLite copy): ErrAppDBMismatch otherwise.
func (c DBConfig) driver() (driver.Driver, error) {
	if c.DB == nil {
		return c.Driver, nil
	}
	d := c.DB.Driver()
	if c.Driver == nil {
		return d, nil
	}
	if reflect.TypeOf(c.Driver) != reflect.TypeOf(d) {
		return nil, fmt.Errorf("DBConfig.Driver is %T and DBConfig.DB's driver %T: give the driver the app opens this database with once (DBConfig.DB alone takes its driver; "+
			"if DB's driver wraps Driver, leave DB out): %w", c.Driver, d, ErrAppDBMismatch)
	}
	return c.Driver, nil
}

func bad(format string, args ...any) error {
	return fmt.Errorf("check config: "+format+": %w", append(args, ErrBadConfig)...)
}

// withDefaults returns c with defaults filled in, or ErrBadConfig.
func (c DBConfig) withDefaults() (DBConfig, error) {
	if c.Path == "" {
		return c, bad("no database path")
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = 5 * time.Second
	}
	if c.BusyTimeout < 0 {
		return c, bad("busy timeout %v", c.BusyTimeout)
	}
	if c.Readers == 0 {
		c.Readers = min(4, max(2, runtime.GOMAXPROCS(0)))
	}
	if c.Readers < 1 {
		return c, bad("readers %d", c.Readers)
	}
	return c, nil
}

// withDefaults returns c with defaults filled in, or ErrBadConfig; a
// read-only database implies no saves and no rebuilds.
func (c Source) withDefaults(readOnly bool) (Source, error) {
	if (c.Table == "") != (c.Column == "") {
		return c, bad("table %q and column %q: give both or neither", c.Table, c.Column)
	}
	if c.Table != "" {
		if err := store.CheckName("table", c.Table); err != nil {
			return c, err
		}
		if err := store.CheckName("column", c.Column); err != nil {
			return c, err
		}
	}
	if readOnly {
		c.NoSaveOnClose, c.AutoRebuild.Off = true, true
	}
	if c.AutoRebuild.Every < 0 {
		return c, bad("auto-rebuild interval %v", c.AutoRebuild.Every)
	}
	if c.SnapshotMode == 0 {
		c.SnapshotMode = snapshot.FileMode
	}
	if c.SnapshotMode&^os.ModePerm != 0 || c.SnapshotMode&0o600 != 0o600 {
		return c, bad("snapshot mode %v: want a permission the owner can read and write", c.SnapshotMode)
	}
	if c.FPR == 0 {
		c.FPR = 0.01
	}
	if !(c.FPR > 0 && c.FPR < 1) {
		return c, bad("false-positive rate %v not in (0, 1)", c.FPR)
	}
	if c.Headroom == 0 {
		c.Headroom = 2
	}
	if !(c.Headroom >= 1) || math.IsInf(c.Headroom, 0) {
		return c, bad("headroom %v below 1", c.Headroom)
	}
	if c.AutoRebuild.Factor == 0 {
		c.AutoRebuild.Factor = 2
	}
	if !(c.AutoRebuild.Factor >= 1) || math.IsInf(c.AutoRebuild.Factor, 0) {
		return c, bad("rebuild factor %v below 1", c.AutoRebuild.Factor)
	}
	if c.LogRetain == 0 {
		c.LogRetain = 100_000
	}
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = 10_000
	}
	return c, nil
}
