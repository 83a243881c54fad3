package store

import (
	"errors"
	"fmt"
)

// The library's sentinel errors, shared by every layer; package rebuild
// (and rebuild/ops) exports and documents them.
var (
	ErrBadConfig     = errors.New("invalid configuration")
	ErrNoSource      = errors.New("source table or column not found")
	ErrNotIndexed    = errors.New("key column not indexed")
	ErrInexactColumn = errors.New("key column does not compare ids exactly")
	ErrNotAttached   = errors.New("source not attached")
	ErrHardLinked    = errors.New("database file has more than one name")
	ErrReplaced      = errors.New("database file replaced")
	ErrHeld          = errors.New("source held by a rebuild's scan")
	ErrReadOnly      = errors.New("database opened read-only")
	ErrClosed        = errors.New("closed")
	ErrSuspended     = errors.New("database suspended")
	ErrNotServing    = errors.New("filter not serving")
	ErrKeyTooLong    = errors.New("key too long")
	ErrNotOwnTable   = errors.New("not the library's own table")

	ErrCannotCatchUp = errors.New("cannot catch up from the filter's generation")
	ErrNotVouched    = errors.New("snapshot not recorded by the database")
	ErrImplausible   = errors.New("snapshot implausibly large for the source")
	ErrUnsafeTarget  = errors.New("refusing to replace file")

	ErrUnsupportedDriver = errors.New("unsupported SQLite driver")
	ErrSecondSQLite      = errors.New("a second copy of SQLite is linked")

	// ErrAppLeft: the app's *sql.DB is closed or reported a table lock (a
	// shared cache), for good; run the statement on a reader. Internal.
	ErrAppLeft = errors.New("the app's *sql.DB is left")

	// ErrAppBusy: another statement of the library's runs on the app's
	// pool now; run this one on a reader. Internal.
	ErrAppBusy = errors.New("the app's *sql.DB is busy")
)

// wrap prefixes a non-nil *err with what (deferred, on a named result).
func wrap(err *error, what string) {
	if *err != nil {
		*err = fmt.Errorf("%s: %w", what, *err)
	}
}
