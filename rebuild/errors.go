package rebuild

import "errors"

// Errors returned by this package. Each is wrapped with context ("verb
// noun: %w"); test with errors.Is. SQLite errors are wrapped as they come
// from github.com/mattn/go-sqlite3 (errors.As a sqlite3.Error).
var (
	// ErrBadConfig: a Config field is out of range (false-positive rate
	// outside (0, 1), headroom below 1, no database path, ...).
	ErrBadConfig = errors.New("invalid configuration")

	// ErrBadName: a table or column name is empty, too long, not valid
	// UTF-8, or holds characters other than letters, digits, '_' and '$'
	// (or starts with a digit, or with the reserved "sqlite_" prefix).
	ErrBadName = errors.New("invalid table or column name")

	// ErrNoSource: the source table or its key column does not exist.
	ErrNoSource = errors.New("source table or column not found")

	// ErrNotIndexed: SQLite would scan the whole source table to look up
	// one key. Index the key column, or set Config.AllowUnindexed.
	ErrNotIndexed = errors.New("key column not indexed")

	// ErrNotOwnTable: MarkFetched inserts rows only into the table the
	// library owns (Config.Table empty). For an app's table, use Update or
	// Cover inside the app's own transaction.
	ErrNotOwnTable = errors.New("not the library's own table")

	// ErrNotServing: the filter is being rebuilt (every query goes to
	// SQLite), so there is nothing to save.
	ErrNotServing = errors.New("filter not serving")

	// ErrCannotCatchUp: a snapshot covers a generation the database's log
	// no longer (or not yet) holds: the log was compacted past it, or the
	// database was restored from an older backup. The filter is rebuilt.
	ErrCannotCatchUp = errors.New("cannot catch up from snapshot generation")

	// ErrInexactColumn: the key column cannot answer "was this id
	// stored?" exactly: its declared type does not have TEXT affinity
	// (INTEGER or NUMERIC store '007' as 7, BLOB never equals a text id),
	// or its collation is not BINARY (NOCASE would confirm "abc" for a
	// stored "ABC": a never-fetched record reported fetched). Declare the
	// column TEXT without COLLATE. There is no opt-out.
	ErrInexactColumn = errors.New("key column does not compare ids exactly")

	// ErrReadOnly: the index was opened with Config.ReadOnly, and the call
	// would write (Update, MarkFetched, Rebuild, Save).
	ErrReadOnly = errors.New("index is read-only")

	// ErrNotAttached: Detach found no record of the source in the
	// database: it was never attached, or was detached already.
	ErrNotAttached = errors.New("source not attached")

	// ErrUnsafeTarget: a snapshot would replace a file the library must
	// not replace: the database itself or its -wal, -shm or -journal file
	// (under any path), a directory, a file that is not a snapshot, or the
	// snapshot of another dataset. The last two may be forced
	// (Config.ReplaceForeignFile); the database never.
	ErrUnsafeTarget = errors.New("refusing to replace file")

	// ErrNotVouched: the database has no record of saving this snapshot
	// (checksum, generation and m): it was saved by another history of
	// the database (which was then restored from a backup), forged, or
	// written by a version that kept no records. Checksums prove that
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

	// ErrNestedCall: an Index method was called from inside the function
	// given to Update, on the goroutine running it. Update holds the
	// index's only write connection; waiting for it there would never end.
	ErrNestedCall = errors.New("index called from inside Update")

	// ErrClosed: the index was closed.
	ErrClosed = errors.New("index closed")
)
