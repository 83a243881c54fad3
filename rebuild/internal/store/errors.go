package store

import "errors"

// Errors of this package; package rebuild exports them under the same
// names and documents them there.
var (
	ErrBadName       = errors.New("invalid table or column name")
	ErrNoSource      = errors.New("source table or column not found")
	ErrNotIndexed    = errors.New("key column not indexed")
	ErrInexactColumn = errors.New("key column does not compare ids exactly")
	ErrNotAttached   = errors.New("source not attached")
	ErrHardLinked    = errors.New("database file has more than one name")
	ErrReplaced      = errors.New("database file replaced")
	ErrHeld          = errors.New("source held by a rebuild's scan")

	ErrNoDriver          = errors.New("no SQLite driver")
	ErrSecondSQLite      = errors.New("a second copy of SQLite is linked")
	ErrUnsupportedDriver = errors.New("unsupported SQLite driver")
	ErrAppDBMismatch     = errors.New("the app's *sql.DB does not match the configuration")
	ErrNotUTF8           = errors.New("the database's text encoding is not UTF-8")

	// ErrAppClosed: the app closed the *sql.DB it handed over; the
	// statement runs on the library's own connections instead. Never
	// returned by package rebuild.
	ErrAppClosed = errors.New("the app's *sql.DB is closed")
	// ErrAppSharedCache: a statement on the app's pool found a table
	// locked (SQLITE_LOCKED), as connections of SQLite's shared cache
	// lock each other's tables while one writes: the statement runs on
	// the library's own connections, which have caches of their own, and
	// so does every later one. Never returned by package rebuild.
	ErrAppSharedCache = errors.New("the app's *sql.DB reported a table lock (SQLITE_LOCKED: a shared cache)")
)
