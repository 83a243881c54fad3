package syncbench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Body is what the app stores for every record: a stand-in for the
// record's JSON, the same for every row.
const Body = `{"title":"a record the sync engine fetched","done":false,"n":42}`

// Table and Column are the app's table: records(id TEXT PRIMARY KEY, body TEXT).
const (
	Table  = "records"
	Column = "id"
)

// baseVersion changes when the base tables below change, so that cached
// files of an older layout are not reused (2: rows written in a seeded
// random order).
const baseVersion = 2

// DSN builds a SQLite URI for path with the driver's options ('%', '?'
// and '#' escaped so they stay part of the file name).
func DSN(path, opts string) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(filepath.ToSlash(path))
	return "file:" + esc + "?" + opts
}

// CacheDir is where base tables are kept between runs: $SYNCBENCH_DIR, or
// syncfilter-syncbench in the temp directory.
func CacheDir() string {
	if d := os.Getenv("SYNCBENCH_DIR"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "syncfilter-syncbench")
}

// BaseDB returns the path of a database holding the app's table with the
// ids 0..rows-1 of shape, in WAL mode, never seen by the library; it is
// built once and kept in CacheDir (about 2 s and 130 MB per million rows).
// Callers copy it (CopyDB) before writing to it.
func BaseDB(ctx context.Context, shape Shape, rows int64) (string, error) {
	dir := CacheDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("make cache dir: %w", err)
	}
	enc := "" // an encrypted copy (SQLCipher's) is kept apart
	if len(DefaultDriver().Params) > 0 {
		enc = "-" + DefaultDriver().Name
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%d-v%d%s.db", shape.Name, rows, baseVersion, enc))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	tmp := fmt.Sprintf("%s.tmp%d", path, os.Getpid())
	if err := buildBase(ctx, tmp, shape, rows); err != nil {
		removeDB(tmp)
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		removeDB(tmp)
		return "", fmt.Errorf("place base table: %w", err)
	}
	return path, nil
}

// buildBase writes the table with its ids in a random order seeded by
// the row count, as ids arrive in an app: rowids follow arrival, and the
// key's index has the shape random inserts leave.
func buildBase(ctx context.Context, path string, shape Shape, rows int64) error {
	d := DefaultDriver()
	db, err := sql.Open(d.SQLName, d.DSN(path, "_journal_mode=OFF&_sync=OFF&_cache_size=-262144"))
	if err != nil {
		return fmt.Errorf("build base table: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`); err != nil {
		return fmt.Errorf("build base table: %w", err)
	}
	ids := make([]string, rows)
	for i := range ids {
		ids[i] = shape.ID(uint64(i))
	}
	rand.New(rand.NewPCG(0x62617365, uint64(rows))).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	const per = 500 // rows per INSERT statement
	q := `INSERT INTO records (id, body) VALUES (?, '` + Body + `')` + strings.Repeat(`, (?, '`+Body+`')`, per-1)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("build base table: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	st, err := tx.PrepareContext(ctx, q)
	if err != nil {
		return fmt.Errorf("build base table: %w", err)
	}
	args := make([]any, per)
	for len(ids) >= per {
		for j := range args {
			args[j] = ids[j]
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("build base table: %w", err)
		}
		ids = ids[per:]
	}
	for _, id := range ids {
		if _, err := tx.ExecContext(ctx, `INSERT INTO records (id, body) VALUES (?, '`+Body+`')`, id); err != nil {
			return fmt.Errorf("build base table: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("build base table: %w", err)
	}
	// The app's choice, made once and kept in the file.
	if _, err := db.ExecContext(ctx, `PRAGMA journal_mode = WAL`); err != nil {
		return fmt.Errorf("build base table: %w", err)
	}
	return nil
}

// PrepareCopy copies the base table of shape and rows (BaseDB) into dir
// as app.db and builds its snapshot, app.db.sfb, with
// ops.BuildSnapshot, as the cron job or the app's previous run leaves
// it.
func PrepareCopy(ctx context.Context, shape Shape, rows int64, dir string) (db, snap string, err error) {
	base, err := BaseDB(ctx, shape, rows)
	if err != nil {
		return "", "", err
	}
	db, snap = filepath.Join(dir, "app.db"), filepath.Join(dir, "app.db.sfb")
	if err := CopyDB(base, db); err != nil {
		return "", "", err
	}
	if err := BuildLibSnapshot(ctx, DefaultDriver(), db, Table, snap); err != nil {
		return "", "", fmt.Errorf("prepare copy: %w", err)
	}
	return db, snap, nil
}

// CopyDB copies the database file src to dst (no -wal: BaseDB's files
// are checkpointed).
func CopyDB(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy database: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("copy database: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy database: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("copy database: %w", err)
	}
	return nil
}

// removeDB removes a database file and its -wal, -shm and -journal files.
func removeDB(path string) {
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		_ = os.Remove(path + suffix)
	}
}

// EmptyDB creates the app's table, empty, in a new database in WAL mode.
func EmptyDB(ctx context.Context, path string) error {
	d := DefaultDriver()
	db, err := sql.Open(d.SQLName, d.DSN(path, "_journal_mode=WAL"))
	if err != nil {
		return fmt.Errorf("create app table: %w", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`); err != nil {
		return fmt.Errorf("create app table: %w", err)
	}
	return nil
}

// App is the sync engine's own side of the database: it stores what it
// fetched with its own INSERTs, on its own connection, one transaction
// per page, as it did before it used the library.
type App struct {
	db  *sql.DB
	ins *sql.Stmt
}

// OpenApp opens the app's connection (WAL with synchronous=NORMAL, the
// usual setting for WAL; immediate transactions, since it only writes).
func OpenApp(path string) (*App, error) {
	d := DefaultDriver()
	db, err := sql.Open(d.SQLName, d.DSN(path, "_busy_timeout=10000&_sync=NORMAL&_txlock=immediate"))
	if err != nil {
		return nil, fmt.Errorf("open app connection: %w", err)
	}
	db.SetMaxOpenConns(1)
	ins, err := db.Prepare(`INSERT INTO records (id, body) VALUES (?, ?)`)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open app connection: %w", err)
	}
	return &App{db: db, ins: ins}, nil
}

// Store inserts ids (the records just fetched) in one transaction.
func (a *App) Store(ctx context.Context, ids []string) (time.Duration, error) {
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

// Close closes the app's connection.
func (a *App) Close() error {
	return errors.Join(a.ins.Close(), a.db.Close())
}
