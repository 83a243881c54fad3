package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/syncfilter/syncfilter/internal/sqlitecode"
)

// appRunner runs the statements that confirm keys on the app's own pool
// (Options.App), each prepared once: a commit drops every other
// connection's page cache, so the app's connection is the warm one.
type appRunner struct {
	db    *sql.DB
	gone  atomic.Bool // closed by the app, or a table lock seen: never used again
	busy  atomic.Bool // a statement of the library's runs on the pool: one at a time (take)
	mu    sync.Mutex  // guards stmts; never held while a statement is prepared or run
	stmts map[string]*sql.Stmt
	drv   *Driver // the app's driver (Driver.QueryContext)
}

// errDBClosed is database/sql's unexported "sql: database is closed",
// taken from a handle closed on purpose.
var errDBClosed = func() error {
	db := sql.OpenDB(noConnector{})
	_ = db.Close()
	return db.PingContext(context.Background())
}()

type noConnector struct{}

func (noConnector) Connect(context.Context) (driver.Conn, error) {
	return nil, errors.New("no connection")
}

func (noConnector) Driver() driver.Driver { return nil }

// first runs q on the app's pool and reads its first row. A pool the app
// closed (shut down in any order), or one that reports a table lock (a
// shared cache, whose connections lock each other's tables beyond any busy
// timeout), is left for good: ErrAppLeft, and AppFree says false.
func (a *appRunner) first(ctx context.Context, q string, dest []driver.Value, args ...driver.NamedValue) error {
	if !a.take() {
		return ErrAppBusy
	}
	defer a.give()
	return a.left(a.query(ctx, q, dest, args))
}

// take claims the pool for one statement of the library's (give it back
// with give); false while another runs there. Calls from several of the
// app's goroutines may each find the app using none of its connections
// at once: one at a time, the library holds at most one of them.
func (a *appRunner) take() bool { return a.busy.CompareAndSwap(false, true) }

func (a *appRunner) give() { a.busy.Store(false) }

// left returns err, or ErrAppLeft, with the pool left for good, when err
// says the app closed its pool or a table is locked.
func (a *appRunner) left(err error) error {
	why := ""
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errDBClosed) || errors.Is(err, sql.ErrConnDone):
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
	if err := st.QueryRowContext(a.drv.QueryContext(ctx), in...).Scan(ptrs...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return errNoRow
		}
		return err
	}
	for i, v := range out {
		if b, ok := v.([]byte); ok { // text (JSON) a driver hands over as bytes
			v = string(b)
		}
		dest[i] = v
	}
	return nil
}

// prepared returns q prepared on the pool. PrepareContext may wait for a
// connection, so it runs unlocked; of two callers that prepared q at once,
// the first to store it wins.
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
	defer a.mu.Unlock()
	if kept, ok := a.stmts[q]; ok {
		_ = st.Close()
		return kept, nil
	}
	if a.stmts == nil {
		a.stmts = map[string]*sql.Stmt{}
	}
	a.stmts[q] = st
	return st, nil
}

func (a *appRunner) close() {
	a.mu.Lock()
	stmts := a.stmts
	a.stmts = nil
	a.mu.Unlock()
	for _, st := range stmts {
		_ = st.Close()
	}
}

// CheckApp checks, by device and inode, that the app's pool is on the file
// this DB opened (ErrBadConfig if not, or in memory, or temporary). It
// waits for one of the pool's connections.
func (db *DB) CheckApp(ctx context.Context) error {
	if db.app == nil {
		return nil
	}
	var file sql.NullString
	if err := db.app.db.QueryRowContext(db.Driver.QueryContext(ctx), `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&file); err != nil {
		if sqlitecode.Primary(err) == sqlitecode.NotADB { // an encrypted file, the pool opened without its key
			return fmt.Errorf("ask the app's *sql.DB (DBConfig.DB) which file it opened: the file is not a database, or the pool's key is wrong or missing: %w: %w", ErrBadConfig, redact(err, db.params))
		}
		return fmt.Errorf("ask the app's *sql.DB (DBConfig.DB) which file it opened: %w", redact(err, db.params))
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

// PrepareProbe prepares on the app's pool, when the app uses none of its
// connections and one is idle, the probe of a page of keys as the first
// page of a process runs it: that page then finds it prepared on the
// connection the app used last. An app busy on its pool is left alone (it
// could take the idle connection meanwhile, and the pool open one for the
// prepare); a wait for a connection is cut short at prepareWait, and an
// error only leaves the first page to prepare it.
func (db *DB) PrepareProbe(ctx context.Context, s *Source) {
	if db.AppFree() && db.app.take() {
		defer db.app.give()
		ctx, cancel := context.WithTimeout(ctx, prepareWait)
		defer cancel()
		_, _ = db.app.prepared(ctx, s.sql(probeShape{confirm: true}))
	}
}

// prepareWait bounds PrepareProbe's wait for a connection of the app's
// pool: about ten times a cold prepare.
const prepareWait = 2 * time.Millisecond

// AppFree reports whether the app uses none of its pool's connections and
// one is idle to lend, so that the library rarely makes the pool grow: a
// connection opened for it would hold its -shm lock after Suspend, and
// the app's next statement may run on it with a schema out of date
// (SQLite checks an ALTER TABLE's column names against the connection's
// schema as last read). The app may still take the connection between
// this look and the library's statement; as the library runs one
// statement there at a time (take), the pool then grows by one
// connection at most. An app running statements from other goroutines
// while it calls has a connection in use most of the time, and the calls
// use readers.
func (db *DB) AppFree() bool {
	if db.app == nil || db.app.gone.Load() || db.pool.isQuiet() {
		return false
	}
	st := db.app.db.Stats()
	return st.Idle > 0 && st.InUse == 0
}
