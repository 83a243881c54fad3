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

	// ErrAppLeft: the app's *sql.DB is no longer used, for good: the app
	// closed it, or it reported a table lock (SQLITE_LOCKED, as a shared
	// cache's connections do while one of them writes). The statement
	// runs on the library's own connections instead, and so does every
	// later one. Never returned by package rebuild.
	ErrAppLeft = errors.New("the app's *sql.DB is left")
)
