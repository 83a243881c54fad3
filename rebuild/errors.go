package rebuild

import (
	"errors"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// Errors returned by this package. Each is wrapped with context ("verb
// noun: %w"); test with errors.Is. SQLite errors are wrapped as they come
// from the app's driver (DBConfig.Driver).
var (
	// ErrBadConfig: a DBConfig or Source field is out of range
	// (false-positive rate outside (0, 1), headroom below 1, no database
	// path, ...).
	ErrBadConfig = errors.New("invalid configuration")

	// ErrBadName: a table or column name is empty, too long, not valid
	// UTF-8, or holds characters other than letters, digits, '_' and '$'
	// (or starts with a digit, or with the reserved "sqlite_" prefix).
	ErrBadName = store.ErrBadName

	// ErrNoSource: the source table or its key column does not exist.
	ErrNoSource = store.ErrNoSource

	// ErrNotIndexed: SQLite would scan the whole source table to look up
	// one key. Index the key column, or set Source.AllowUnindexed.
	ErrNotIndexed = store.ErrNotIndexed

	// ErrNotOwnTable: MarkFetched inserts rows only into the table the
	// library owns (Source.Table empty). An app stores records in its own
	// table as it always did, on its own connection: the triggers log
	// them.
	ErrNotOwnTable = errors.New("not the library's own table")

	// ErrNotServing: no filter serves (every query goes to SQLite): there
	// is nothing to save (Save), or the index's background work ended
	// without one (Wait; the error says why).
	ErrNotServing = errors.New("filter not serving")

	// ErrCannotCatchUp: a filter (a snapshot, or the one serving) covers
	// a generation the database's log no longer (or not yet) holds, or
	// holds other entries under: the log was compacted past it, or the
	// database was restored from a backup. The filter is rebuilt.
	ErrCannotCatchUp = errors.New("cannot catch up from the filter's generation")

	// ErrInexactColumn: the key column cannot answer "was this id
	// stored?" exactly: its declared type does not have TEXT affinity
	// (INTEGER or NUMERIC store '007' as 7, BLOB never equals a text id),
	// its collation is not BINARY (NOCASE would confirm "abc" for a
	// stored "ABC": a never-fetched record reported fetched), or it is a
	// generated column (an UPDATE of the columns it is computed from
	// re-keys a row without firing any trigger on it). Declare the column
	// TEXT without COLLATE, stored. There is no opt-out. Checked at open
	// and again after every change of the schema.
	ErrInexactColumn = store.ErrInexactColumn

	// ErrReadOnly: the database was opened read-only, and the call would
	// write (MarkFetched, Rebuild, Save).
	ErrReadOnly = errors.New("index is read-only")

	// ErrNotAttached: Detach found no record of the source in the
	// database: it was never attached, or was detached already.
	ErrNotAttached = store.ErrNotAttached

	// ErrHeld: Detach refused because a rebuild's scan (in any process)
	// holds a live lease on the source; the message names it. Let it
	// finish, or, once its process is gone, force it
	// (DetachOptions.Force, `detach --force`).
	ErrHeld = store.ErrHeld

	// ErrHardLinked: the database file has more than one name (hard
	// links). SQLite keeps its journal beside the name it opened, so
	// writes through two names corrupt the database
	// (sqlite.org/howtocorrupt.html): refused at open, and by every call
	// once a second name appears.
	ErrHardLinked = store.ErrHardLinked

	// ErrReplaced: the file at the database path is no longer the file
	// the index opened (deleted, or deleted and created again). The index
	// never answers from the old file: it opens the new one and serves
	// from SQLite until its filter is rebuilt there; this error is
	// returned while no database can be opened at the path.
	ErrReplaced = store.ErrReplaced

	// ErrUnsafeTarget: a snapshot would replace a file the library must
	// not replace: the database itself or its -wal, -shm or -journal file
	// (under any path), a directory, a file that is not a snapshot, or the
	// snapshot of another dataset. The last two may be forced
	// (Source.ReplaceForeignFile); the database never.
	ErrUnsafeTarget = errors.New("refusing to replace file")

	// ErrNotVouched: the database has no record of saving this snapshot
	// (checksum, generation and m): it was saved by another history of
	// the database (which was then restored from a backup), or forged, or
	// written by a writer that recorded nothing. Checksums prove that
	// bytes are intact, not that they are true for this database: the
	// snapshot is refused and the filter rebuilt from SQLite.
	ErrNotVouched = errors.New("snapshot not recorded by the database")

	// ErrImplausible: a snapshot claims a filter far larger than the
	// source needs (more than PlausibleFactor times the bits a rebuild
	// would size now). It is refused before its payload is read, so a
	// file cannot make the index allocate more than the database
	// warrants.
	ErrImplausible = errors.New("snapshot implausibly large for the source")

	// ErrKeyTooLong: a key is longer than MaxKeyBytes (before or after
	// normalization). Refused before any SQL is built.
	ErrKeyTooLong = errors.New("key too long")

	// ErrNoDriver: DBConfig.Driver is nil and the build has no default
	// driver (github.com/mattn/go-sqlite3 needs cgo, and the
	// syncfilter_nomattn tag leaves it out): pass the app's driver.
	ErrNoDriver = store.ErrNoDriver

	// ErrSecondSQLite: neither DBConfig.Driver nor DBConfig.DB is given
	// and the program links another copy of SQLite besides the default's
	// (modernc.org/sqlite, ncruces/go-sqlite3, a SQLCipher build, ...):
	// a module known to carry one in the binary's build information, or
	// a database/sql driver registered from a package whose path names
	// SQLite, SQLCipher or libSQL. Two copies in one process do not see
	// each other's file locks and corrupt the database: pass the driver
	// the app uses. What the check cannot see is in docs/INTEGRATION.md.
	ErrSecondSQLite = store.ErrSecondSQLite

	// ErrUnsupportedDriver: DBConfig.Driver is not one of the drivers the
	// library supports (github.com/mattn/go-sqlite3, modernc.org/sqlite,
	// github.com/ncruces/go-sqlite3/driver), or its SQLite is older than
	// the library needs (3.45.0: the JSON functions, octet_length, and a
	// NUL inside a JSON string read back whole); the message names the
	// driver and what is missing.
	ErrUnsupportedDriver = store.ErrUnsupportedDriver

	// ErrNotUTF8: the database stores text in UTF-16 (PRAGMA encoding,
	// chosen when the file was created). The library measures, logs and
	// compares ids as UTF-8 bytes, so it refuses the database rather than
	// answer inexactly. Nothing is written.
	ErrNotUTF8 = store.ErrNotUTF8

	// ErrAppDBMismatch: DBConfig.DB does not go with the rest of the
	// DBConfig: DBConfig.Driver is of another type than DB's driver (two
	// drivers named for one database), or DB's main database is not the
	// file at DBConfig.Path (another file, an in-memory or a temporary
	// database), while the library would confirm keys on DB's pool.
	// Refused at open, before anything is written.
	ErrAppDBMismatch = store.ErrAppDBMismatch

	// ErrClosed: the index was closed.
	ErrClosed = errors.New("index closed")

	// ErrSuspended: the app's Rebuild was interrupted by DB.Suspend, or
	// asked while the database is suspended; the filter that served
	// before (or SQLite) answers. Ask again after Resume.
	ErrSuspended = errors.New("database suspended")
)
