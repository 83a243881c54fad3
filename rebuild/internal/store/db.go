package store

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/syncfilter/syncfilter/internal/fsafe"
	"github.com/syncfilter/syncfilter/internal/sqlitecode"
)

// Options say how to open a database.
type Options struct {
	Driver      *Driver       // the app's SQLite driver (NewDriver)
	ReadOnly    bool          // no writer, nothing written
	Create      bool          // a missing file may be created (the library's own table)
	Readers     int           // reading connections, at least 1
	BusyTimeout time.Duration // how long SQLite waits for a lock
	Knobs       Knobs         // sizes the tests shrink
	App         *sql.DB       // the app's own pool on this file, for confirmations (apppool.go)
	Params      url.Values    // the app's URI parameters on every connection (params.go)
}

// Knobs are sizes the tests shrink (zero: the defaults).
type Knobs struct {
	ScanChunk     int           // keys one statement of a scan reads (4096)
	LogChunk      int           // log entries one statement reads (1024)
	ShortKey      int           // longest key read inside a chunk's list (512); longer ones one by one
	NoChunkedScan bool          // scan row by row, as for a source without an index
	LeaseTerm     time.Duration // how long a scan's lease lasts unless renewed (LeaseTerm)
	PlainSQL      bool          // the plain dialect whatever the SQLite (dialect.go)
}

func (k Knobs) withDefaults() Knobs {
	k.ScanChunk = cmp.Or(max(k.ScanChunk, 0), 4096)
	k.LogChunk = cmp.Or(max(k.LogChunk, 0), 1024)
	k.ShortKey = cmp.Or(max(k.ShortKey, 0), 512)
	k.LeaseTerm = cmp.Or(max(k.LeaseTerm, 0), LeaseTerm)
	return k
}

// DB is one database file opened by the library (see the package doc),
// safe for concurrent use.
type DB struct {
	Path    Path
	Driver  *Driver
	id      FileID // the file at Path.Real when it was opened
	created bool   // Open created the file
	knobs   Knobs
	params  url.Values // Options.Params, cut out of the app's pool's errors
	plain   bool       // the statements' plain dialect (dialect.go), chosen by open before Open returns

	w    *sql.DB    // the writer, one connection: every write (update); nil when read-only
	r    *sql.DB    // the reading connections
	pool *pool      // the readers among them
	app  *appRunner // the app's pool, if it handed it over

	dv        chan struct{} // capacity 1: held by the one reading dvConn
	dvConn    *Conn         // DataVersion's connection, opened at first use
	spellScan chan struct{} // capacity 1: one ScanSpellings at a time
}

// ownConns are the reading connections beside the readers, so that none
// waits for one: DataVersion's, a rebuild's scan and its count, and one
// ScanSpellings.
const ownConns = 4

// Open opens the database at path: a missing file is a *NoDatabase unless
// opts.Create, a file with more than one name ErrHardLinked.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	if opts.Driver == nil {
		return nil, fmt.Errorf("open database %s: %w", path, ErrUnsupportedDriver)
	}
	p, err := ResolvePath(path)
	if err != nil {
		return nil, err
	}
	info, statErr := os.Stat(p.Real)
	switch {
	case statErr == nil && !info.Mode().IsRegular():
		return nil, fmt.Errorf("open database %s: not a regular file (%s)", path, info.Mode().Type())
	case statErr != nil && !(errors.Is(statErr, os.ErrNotExist) && opts.Create && !opts.ReadOnly):
		return nil, fmt.Errorf("open database: %w", &NoDatabase{Path: path, Err: statErr})
	}
	db := &DB{Path: p, Driver: opts.Driver, created: statErr != nil, knobs: opts.Knobs.withDefaults(), params: opts.Params,
		dv: make(chan struct{}, 1), spellScan: make(chan struct{}, 1)}
	if opts.App != nil {
		db.app = &appRunner{db: opts.App, drv: opts.Driver}
	}
	if err := db.open(ctx, opts); err != nil {
		db.Close()
		db.RemoveCreated()
		if sqlitecode.Primary(err) == sqlitecode.NotADB { // at the first read, before any write
			err = keyError(err)
		}
		return nil, fmt.Errorf("open database %s with %s: %w", path, opts.Driver.Name, err)
	}
	return db, nil
}

// open opens the writer (unless read-only) and the readers, and checks the
// file. Readers are read-only: a writable connection would roll back a hot
// journal beside the name, which after the app replaced the file is the
// new file's transaction; the writer rolls back a real one (Conn.each).
func (db *DB) open(ctx context.Context, opts Options) (err error) {
	if !opts.ReadOnly {
		mode := "rw"
		if db.created {
			mode = "rwc"
		}
		if db.w, err = opts.Driver.pool(db.Path.Real, mode, opts.BusyTimeout, opts.Params); err != nil {
			return err
		}
		db.w.SetMaxOpenConns(1)
		if err := db.w.PingContext(ctx); err != nil {
			return err
		}
	}
	if db.r, err = opts.Driver.pool(db.Path.Real, "ro", opts.BusyTimeout, opts.Params); err != nil {
		return err
	}
	readers := max(opts.Readers, 1)
	db.r.SetMaxOpenConns(readers + ownConns)
	db.r.SetMaxIdleConns(readers + ownConns)
	db.pool = &pool{sem: make(chan struct{}, readers)}
	if db.id, err = Identify(db.Path.Real); err != nil { // a hard link is refused before any write
		return err
	}
	if db.id.Links > 1 {
		return fmt.Errorf("%d names link to the file (SQLite keeps a journal beside each name, and writes through two corrupt it): %w", db.id.Links, ErrHardLinked)
	}
	c, err := db.Reader(ctx)
	if err != nil {
		return err
	}
	defer db.Release(c)
	if err := checkEncoding(ctx, c); err != nil {
		// A VFS that opened the file and cannot read it: ncruces'
		// adiantum and xts without a key.
		if sqlitecode.Primary(err) == sqlitecode.CantOpen && opts.Params.Get("vfs") != "" {
			return keyError(err)
		}
		return err
	}
	db.plain, err = opts.Driver.checkEngine(ctx, c)
	return err
}

// keyError is err, from the first read of a file that SQLite does not
// read as a database: an encrypted one read with a wrong or missing key.
func keyError(err error) error {
	return fmt.Errorf("the file is not a database, or its key is wrong or missing (DBConfig.ConnParams): %w: %w", ErrBadConfig, err)
}

// checkEncoding refuses a database that stores text as UTF-16: ids are
// measured and compared as UTF-8 bytes (octet_length, JSON arrays).
func checkEncoding(ctx context.Context, c *Conn) error {
	var vals [1]driver.Value
	if err := c.first(ctx, `PRAGMA encoding`, vals[:]); err != nil {
		return fmt.Errorf("read the text encoding: %w", err)
	}
	if enc := textValue(vals[0]); enc != "UTF-8" {
		return fmt.Errorf("the database stores text as %s; the library needs UTF-8 (PRAGMA encoding, set when the file is created): %w", enc, ErrInexactColumn)
	}
	return nil
}

// LogChunk is how many log entries one statement reads (Knobs.LogChunk).
func (db *DB) LogChunk() int { return db.knobs.LogChunk }

// Close closes every connection; those handed out close when released.
func (db *DB) Close() {
	if db.pool != nil {
		db.pool.close()
	}
	db.closeDV(true)
	if db.app != nil {
		db.app.close()
	}
	if db.r != nil {
		_ = db.r.Close()
	}
	if db.w != nil {
		_ = db.w.Close()
	}
}

// Quiesce(true) keeps no connection open while none is in use, until
// Quiesce(false); it waits for no statement. In WAL mode an open
// connection holds a shared lock on the -shm file, and iOS ends a
// suspended app that holds a lock on a file of a shared container.
func (db *DB) Quiesce(on bool) {
	db.pool.quiesce(on)
	writers, readers := 1, cap(db.pool.sem)+ownConns
	if on {
		writers, readers = 0, 0
		defer db.closeDV(false) // after the flag: a reader in progress closes it itself
	}
	if db.w != nil {
		db.w.SetMaxIdleConns(writers)
	}
	db.r.SetMaxIdleConns(readers)
}

// RemoveCreated removes the file and its siblings if Open created it (a
// failed first Open leaves nothing behind). Call it only after Close.
func (db *DB) RemoveCreated() {
	if !db.created {
		return
	}
	for _, f := range fsafe.Siblings(db.Path.Real) {
		_ = os.Remove(f)
	}
}

// SameFile checks, with one stat, that the file at the app's path is still
// the one opened (ErrReplaced), with one name (ErrHardLinked).
func (db *DB) SameFile() error {
	id, err := Identify(db.Path.Abs)
	switch {
	case err != nil:
		return fmt.Errorf("check database %s: %v: %w", db.Path.Given, err, ErrReplaced)
	case !id.Same(db.id):
		return fmt.Errorf("check database %s: another file is at the path: %w", db.Path.Given, ErrReplaced)
	case id.Links > 1:
		return fmt.Errorf("check database %s: %d names link to the file: %w", db.Path.Given, id.Links, ErrHardLinked)
	}
	return nil
}

// LockHeld reports whether err is SQLITE_BUSY after the busy timeout, or a
// shared cache's SQLITE_LOCKED: no schema change caused it, and reading the
// schema would wait for the same lock.
func LockHeld(err error) bool {
	return sqlitecode.Is(err, sqlitecode.Busy) || sqlitecode.Is(err, sqlitecode.Locked)
}

// hotJournal reports whether err is a read-only connection's refusal to
// roll back a hot journal (a writer died in a rollback-journal transaction).
func hotJournal(err error) bool {
	return err != nil && sqlitecode.Is(err, sqlitecode.ReadOnlyRollback)
}

// rollBackHotJournal has the writer roll back a hot journal: its next
// transaction does, once update checked the file (a journal beside a name
// the file no longer has is another file's: ErrReplaced).
func (db *DB) rollBackHotJournal(ctx context.Context) error {
	return db.update(ctx, "roll back a hot journal", func(*Tx) error { return nil })
}

// NoDatabase is a database file that is not there (or not reachable):
// errors.Is ErrNoSource, and its cause (os.ErrNotExist).
type NoDatabase struct {
	Path string
	Err  error
}

func (e *NoDatabase) Error() string {
	if errors.Is(e.Err, os.ErrNotExist) {
		return e.Path + " does not exist (the library never creates an app's database)"
	}
	return e.Err.Error()
}

func (e *NoDatabase) Unwrap() []error { return []error{e.Err, ErrNoSource} }
