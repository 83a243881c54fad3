package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/syncfilter/syncfilter/internal/sqlitecode"
)

// The app's pool. A connection's page cache is dropped whole whenever
// another connection commits (SQLite re-reads every page after it sees the
// WAL or the file change), so the library's own readers, which never
// write, start cold after each of the app's commits, while the
// connection that just committed stays warm: a page of keys confirmed on
// the app's own pool reads what the app's INSERTs just touched from memory.
// When the app hands over its *sql.DB (Options.App), the statements that
// confirm keys (Probe, Confirm) run on it; everything else (the quiet
// path's notes, catch-up, scans) stays on the library's connections.
//
// The app may close its pool before the library (a shutdown in any
// order): the first statement that finds it closed marks it gone, returns
// ErrAppLeft (the caller runs the statement on its own reader), and
// AppFree says false from then on. A pool opened with SQLite's shared
// cache (cache=shared) is left the same way at the first table lock it
// reports: its connections lock each other's tables while one of them
// writes, which a busy timeout does not wait out.

// appRunner runs statements on the app's pool, each prepared once on it
// (database/sql prepares it again on each connection as needed).
type appRunner struct {
	db    *sql.DB
	gone  atomic.Bool // the app closed the pool, or it reported a table lock: nothing runs on it any more
	mu    sync.Mutex  // guards stmts; never held while a statement is prepared or run
	stmts map[string]*sql.Stmt
}

// errDBClosed is the error database/sql returns for a statement on a
// closed *sql.DB ("sql: database is closed"). The package does not export
// it; it is one value, taken here from a handle closed on purpose.
var errDBClosed = func() error {
	db := sql.OpenDB(noConnector{})
	_ = db.Close()
	return db.PingContext(context.Background())
}()

// noConnector connects to nothing (errDBClosed's handle never asks it).
type noConnector struct{}

func (noConnector) Connect(context.Context) (driver.Conn, error) {
	return nil, errors.New("no connection")
}

func (noConnector) Driver() driver.Driver { return nil }

// closedPool reports whether err says the app's pool is closed.
func closedPool(err error) bool {
	return errors.Is(err, errDBClosed) || errors.Is(err, sql.ErrConnDone)
}

// first runs q with args on the app's pool and reads its first row.
// ErrAppLeft: the app closed its pool, or the pool reported a table
// lock (for good: AppFree says false from then on).
func (a *appRunner) first(ctx context.Context, q string, dest []driver.Value, args ...driver.NamedValue) error {
	err := a.query(ctx, q, dest, args)
	why := ""
	switch {
	case err == nil:
		return nil
	case closedPool(err):
		why = "closed"
	case sqlitecode.Is(err, sqlitecode.Locked):
		why = "a table locked, as in a shared cache"
	default:
		return err
	}
	a.gone.Store(true)
	return fmt.Errorf("run on the app's pool: %w (%s: %w)", ErrAppLeft, why, err)
}

func (a *appRunner) query(ctx context.Context, q string, dest []driver.Value, args []driver.NamedValue) error {
	if a.gone.Load() {
		return errDBClosed
	}
	st, err := a.prepared(ctx, q)
	if err != nil {
		return err
	}
	in := make([]any, len(args))
	for i, v := range args {
		in[i] = v.Value
	}
	out := make([]any, len(dest))
	ptrs := make([]any, len(dest))
	for i := range out {
		ptrs[i] = &out[i]
	}
	if err := st.QueryRowContext(ctx, in...).Scan(ptrs...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return errNoRow
		}
		return err
	}
	for i, v := range out {
		// The library's statements return text (JSON) and integers only;
		// a driver may hand text over as bytes.
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		dest[i] = v
	}
	return nil
}

// prepared returns q prepared on the app's pool. The lock guards the map
// only: PrepareContext takes one of the app's connections (and may wait
// for one), so it runs unlocked; of two callers that prepared q at once,
// the first to store it wins and the other closes its own.
func (a *appRunner) prepared(ctx context.Context, q string) (*sql.Stmt, error) {
	a.mu.Lock()
	st, ok := a.stmts[q]
	a.mu.Unlock()
	if ok {
		return st, nil
	}
	st, err := a.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	if kept, ok := a.stmts[q]; ok {
		a.mu.Unlock()
		_ = st.Close()
		return kept, nil
	}
	if a.stmts == nil {
		a.stmts = map[string]*sql.Stmt{}
	}
	a.stmts[q] = st
	a.mu.Unlock()
	return st, nil
}

// close closes the statements (the store closes once no call uses it).
func (a *appRunner) close() {
	a.mu.Lock()
	stmts := a.stmts
	a.stmts = nil
	a.mu.Unlock()
	for _, st := range stmts {
		_ = st.Close()
	}
}

// CheckApp checks that the app's pool is a handle on the file this DB
// opened, by device and inode: ErrBadConfig if its main database is
// another file, or in memory, or a temporary one. It runs one query on
// the app's pool, which waits for one of its connections.
func (db *DB) CheckApp(ctx context.Context) error {
	if db.app == nil {
		return nil
	}
	var file sql.NullString
	if err := db.app.db.QueryRowContext(ctx, `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&file); err != nil {
		return fmt.Errorf("ask the app's *sql.DB (DBConfig.DB) which file it opened: %w", err)
	}
	if file.String == "" {
		return fmt.Errorf("the app's *sql.DB (DBConfig.DB) is on an in-memory or temporary database, not on %s: %w", db.Path.Given, ErrBadConfig)
	}
	id, err := Identify(file.String)
	if err != nil {
		return fmt.Errorf("the app's *sql.DB (DBConfig.DB) is on %s (%v), not on %s: %w", file.String, err, db.Path.Given, ErrBadConfig)
	}
	if !id.Same(db.id) {
		return fmt.Errorf("the app's *sql.DB (DBConfig.DB) is on %s, another file than %s: %w", file.String, db.Path.Given, ErrBadConfig)
	}
	return nil
}

// AppFree reports whether the app's pool has a connection idle that a
// statement of the library may borrow, so that the library does not make
// the pool grow: a connection opened for it would stay idle in the app's
// pool, holding its descriptors (and, in WAL mode, its lock on the -shm)
// after a Suspend. database/sql cannot lend only an idle connection: one
// the app takes between this look and the statement has the pool open
// another, within the app's limit (MaxOpenConns); rare. A caller that holds
// the app's last connection (Missing inside the app's own transaction)
// finds none idle and confirms on the library's reader. While the
// database is quiesced (Suspend) the pool is not used at all.
func (db *DB) AppFree() bool {
	if db.app == nil || db.app.gone.Load() || db.pool.isQuiet() {
		return false
	}
	return db.app.db.Stats().Idle > 0
}
