package syncbench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// AppPool is the app's own database/sql pool, as a sync engine opens it
// once at start: WAL (the file's mode, kept), synchronous=NORMAL, a busy
// timeout, immediate write transactions, two connections (AppPoolConns). The
// app stores what it fetched through it (Store), runs its migrations on
// it (migrate.go) and, without the library, asks it which ids it has
// (pool_baselines.go).
type AppPool struct {
	db  *sql.DB
	ins *sql.Stmt
	in  map[int]*sql.Stmt // IN-lists by parameter count
	one *sql.Stmt         // SELECT 1 … WHERE id = ?
}

// AppPoolConns is the app pool's limit of open and of idle connections.
const AppPoolConns = 2

// AppDSNOptions are the pool's connection options (mattn and modernc read
// them; Driver.DSN spells them for ncruces).
const AppDSNOptions = "_busy_timeout=10000&_journal_mode=WAL&_sync=NORMAL&_txlock=immediate"

// openSQL opens a database/sql handle on path with driver d.
func openSQL(d Driver, path, opts string) (*sql.DB, error) {
	db, err := sql.Open(d.SQLName, d.DSN(path, opts))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

// OpenAppPool opens the app's pool on the database at path with driver d
// and opens its first connection.
func OpenAppPool(ctx context.Context, d Driver, path string) (*AppPool, error) {
	db, err := openSQL(d, path, AppDSNOptions)
	if err != nil {
		return nil, fmt.Errorf("open app pool: %w", err)
	}
	db.SetMaxOpenConns(AppPoolConns)
	db.SetMaxIdleConns(AppPoolConns)
	a := &AppPool{db: db, in: map[int]*sql.Stmt{}}
	if err := db.PingContext(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("open app pool: %w", err), db.Close())
	}
	if a.ins, err = db.PrepareContext(ctx, `INSERT INTO records (id, body) VALUES (?, ?)`); err != nil {
		return nil, errors.Join(fmt.Errorf("open app pool: %w", err), db.Close())
	}
	return a, nil
}

// DB returns the pool.
func (a *AppPool) DB() *sql.DB { return a.db }

// Store inserts ids, spelled as the server sent them, in one transaction.
func (a *AppPool) Store(ctx context.Context, ids []string) (time.Duration, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	start := time.Now()
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store records: %w", err)
	}
	st := tx.StmtContext(ctx, a.ins)
	for _, id := range ids {
		if _, err := st.ExecContext(ctx, id, Body); err != nil {
			return 0, errors.Join(fmt.Errorf("store records: %w", err), tx.Rollback())
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store records: %w", err)
	}
	return time.Since(start), nil
}

// Count returns the table's row count.
func (a *AppPool) Count(ctx context.Context) (int64, error) {
	var n int64
	if err := a.db.QueryRowContext(ctx, `SELECT count(*) FROM records`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count records: %w", err)
	}
	return n, nil
}

// SQLiteVersion returns the version of the SQLite the pool runs.
func (a *AppPool) SQLiteVersion(ctx context.Context) (string, error) {
	var v string
	err := a.db.QueryRowContext(ctx, `SELECT sqlite_version()`).Scan(&v)
	return v, err
}

// Close closes the statements and the pool.
func (a *AppPool) Close() error {
	errs := []error{a.ins.Close()}
	for _, st := range a.in {
		errs = append(errs, st.Close())
	}
	if a.one != nil {
		errs = append(errs, a.one.Close())
	}
	return errors.Join(append(errs, a.db.Close())...)
}
