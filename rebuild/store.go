package rebuild

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver
)

// Names of the library's own objects in the database.
const (
	sourcesTable = "syncfilter_sources"
	ownTable     = "syncfilter_fetched"
	ownColumn    = "key"
)

// store is the SQLite side of an Index: one writer connection, a pool of
// readers, and the names and statements of one source (a table and its key
// column). It knows nothing of filters.
type store struct {
	w, r *sql.DB // w has one connection and does every write; r only reads

	path          string // the database file
	table, column string // as SQLite stores them (resolved case-insensitively)
	qTable, qCol  string // quoted
	own           bool   // the library's own table
	readOnly      bool   // nothing is ever written (Config.ReadOnly)
	attached      bool   // the source has its row, log, alias table and triggers
	id            int64  // row of the source in syncfilter_sources
	datasetID     [16]byte
	logTable      string // syncfilter_log_<id>: keys inserted, in commit order
	aliasTable    string // syncfilter_alias_<id>: canonical key → stored non-NFC spelling
	insTrigger    string // syncfilter_ins_<id>, syncfilter_upd_<id>: log inserts and re-keys
	updTrigger    string

	headQuery                          string // the generation, the floor, whether the alias table has rows
	fetchedStmt, aliasStmt, existsStmt *sql.Stmt
	gen                                *genReader // the per-call generation check
	confirms                           confirmStmts
	notedAliases                       atomic.Bool // this process inserted aliases: look them up

	mem *memAliases // read-only: aliases the library could not write to the alias table
}

// dsn builds a SQLite URI for path with the driver's options. '%', '?' and
// '#' in the path are escaped so that they stay part of the file name.
func dsn(path string, opts string) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(filepath.ToSlash(path))
	return "file:" + esc + "?" + opts
}

// openStore opens the database, checks the source and, unless the index is
// read-only, attaches it. Everything that can be checked is checked before
// the first write (see resolveSource), then beforeAttach runs with the
// source's row if it was attached before; only then does one transaction
// create the library's tables, triggers and row. fresh reports that the
// log cannot vouch for the past (first attach, or triggers found missing):
// the filter must be built by a full scan.
func openStore(ctx context.Context, cfg *Config, beforeAttach func(row sourceRow, attached bool) error) (s *store, fresh bool, err error) {
	// An app's table lives in an existing database: never create an empty
	// file for a mistyped path. The library's own table may start one,
	// unless nothing may be written.
	mode := "rwc"
	switch {
	case cfg.ReadOnly:
		mode = "ro"
	case cfg.Table != "":
		mode = "rw"
	}
	_, statErr := os.Stat(cfg.Path)
	if mode != "rwc" && statErr != nil {
		return nil, false, fmt.Errorf("open database: %w", &noDatabase{cfg.Path, statErr})
	}
	created := errors.Is(statErr, os.ErrNotExist) // the library's own table starts a new database
	busy := strconv.FormatInt(cfg.BusyTimeout.Milliseconds(), 10)
	w, err := sql.Open("sqlite3", dsn(cfg.Path, "mode="+mode+"&_txlock=immediate&_busy_timeout="+busy))
	if err != nil {
		return nil, false, fmt.Errorf("open database: %w", err)
	}
	w.SetMaxOpenConns(1)
	rmode := "rw"
	if cfg.ReadOnly {
		rmode = "ro"
	}
	r, err := sql.Open("sqlite3", dsn(cfg.Path, "mode="+rmode+"&_busy_timeout="+busy))
	if err != nil {
		_ = w.Close()
		return nil, false, fmt.Errorf("open database: %w", err)
	}
	r.SetMaxOpenConns(cfg.Readers + 2) // one is the generation reader's, one the confirmations' hot one
	r.SetMaxIdleConns(cfg.Readers + 2)
	st := &store{w: w, r: r, path: cfg.Path, table: cfg.Table, column: cfg.Column, readOnly: cfg.ReadOnly}
	defer func() {
		if err != nil {
			st.close()
			if created { // a failed Open leaves no database behind
				for _, suffix := range databaseFiles {
					_ = os.Remove(cfg.Path + suffix)
				}
			}
		}
	}()
	s = st
	if s.table == "" {
		s.table, s.column, s.own = ownTable, ownColumn, true
	}
	s.qTable, s.qCol = quote(s.table), quote(s.column)
	if err := w.PingContext(ctx); err != nil {
		return nil, false, fmt.Errorf("open database %s: %w", cfg.Path, err)
	}

	// Check, reading only.
	ownMissing := false
	if s.own {
		if err := w.QueryRowContext(ctx, `SELECT NOT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)`, ownTable).Scan(&ownMissing); err != nil {
			return nil, false, fmt.Errorf("check source: %w", err)
		}
		if ownMissing && s.readOnly {
			return nil, false, fmt.Errorf("check source: no table %s in %s: %w", ownTable, cfg.Path, ErrNoSource)
		}
	}
	if !ownMissing { // the library creates its own table with the right type
		if err := s.resolveSource(ctx, w, cfg.AllowUnindexed); err != nil {
			return nil, false, err
		}
	}
	row, attached, err := findSource(ctx, w, s.table, s.column)
	if err != nil {
		return nil, false, err
	}
	if beforeAttach != nil {
		if err := beforeAttach(row, attached); err != nil {
			return nil, false, err
		}
	}

	if s.readOnly {
		fresh, err = s.openReadOnly(ctx, row, attached)
	} else {
		fresh, err = s.attach(ctx)
	}
	if err != nil {
		return nil, false, err
	}
	if err := s.prepare(ctx); err != nil {
		return nil, false, err
	}
	return s, fresh, nil
}

func (s *store) close() {
	if s.gen != nil {
		s.gen.close()
	}
	for _, st := range []*sql.Stmt{s.fetchedStmt, s.aliasStmt, s.existsStmt} {
		if st != nil {
			_ = st.Close()
		}
	}
	s.confirms.close()
	_ = s.r.Close()
	_ = s.w.Close()
}

// setNames derives the names of the source's log and alias tables and
// triggers from its row id.
func (s *store) setNames(id int64) {
	s.id = id
	n := strconv.FormatInt(id, 10)
	s.logTable, s.aliasTable = "syncfilter_log_"+n, "syncfilter_alias_"+n
	s.insTrigger, s.updTrigger = "syncfilter_ins_"+n, "syncfilter_upd_"+n
}

// openReadOnly takes an attached source as it is, or none: nothing is
// created. Without a complete record (never attached, never fully scanned,
// or triggers missing), aliases are found by reading the table's
// non-ASCII keys into memory, and the index answers from SQLite alone.
func (s *store) openReadOnly(ctx context.Context, row sourceRow, attached bool) (fresh bool, err error) {
	s.mem = &memAliases{m: map[string][]string{}}
	if attached {
		s.attached = true
		s.datasetID = row.datasetID
		s.setNames(row.id)
		var objects int
		if err := s.w.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name IN (?, ?, ?, ?)`,
			s.insTrigger, s.updTrigger, s.logTable, s.aliasTable).Scan(&objects); err != nil {
			return false, fmt.Errorf("check source: %w", err)
		}
		if objects == 4 && row.scanned {
			return false, nil
		}
		s.attached = false // a partial record vouches for nothing
	}
	if err := s.scanAliases(ctx); err != nil {
		return false, err
	}
	return true, nil
}

// attach registers the source in syncfilter_sources (with a new random
// dataset id the first time) and creates its log, alias table and
// triggers, all in one write transaction: a failure leaves nothing. It
// switches the database to WAL journal mode first (a persistent setting,
// which lets readers run beside the writer).
func (s *store) attach(ctx context.Context) (fresh bool, err error) {
	var journal string
	if err := s.w.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&journal); err != nil {
		return false, fmt.Errorf("attach source: set WAL journal mode: %w", err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("attach source: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	exec := func(q string, args ...any) error {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("attach source: %w", err)
		}
		return nil
	}
	// No AUTOINCREMENT anywhere: it would create sqlite_sequence, a table
	// SQLite never lets anyone drop, and Detach must leave the schema as
	// it found it.
	if err := exec(`CREATE TABLE IF NOT EXISTS ` + sourcesTable + ` (
		id         INTEGER PRIMARY KEY,
		tbl        TEXT NOT NULL,
		col        TEXT NOT NULL,
		dataset_id BLOB NOT NULL,
		log_floor  INTEGER NOT NULL DEFAULT 0,
		scanned    INTEGER NOT NULL DEFAULT 0,
		created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
		UNIQUE (tbl, col))`); err != nil {
		return false, err
	}
	for _, q := range recordsDDL {
		if err := exec(q); err != nil {
			return false, err
		}
	}
	if s.own {
		if err := exec(`CREATE TABLE IF NOT EXISTS ` + quote(ownTable) + ` (` + quote(ownColumn) + ` TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID`); err != nil {
			return false, err
		}
	}
	row, found, err := findSource(ctx, tx, s.table, s.column) // again: another process may have attached meanwhile
	if err != nil {
		return false, fmt.Errorf("attach source: %w", err)
	}
	if found {
		s.datasetID = row.datasetID
		fresh = !row.scanned // no full scan has completed since the source was attached
		s.setNames(row.id)
	} else {
		fresh = true
		_, _ = rand.Read(s.datasetID[:])
		res, err := tx.ExecContext(ctx, `INSERT INTO `+sourcesTable+` (tbl, col, dataset_id) VALUES (?, ?, ?)`, s.table, s.column, s.datasetID[:])
		if err != nil {
			return false, fmt.Errorf("attach source: %w", err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return false, fmt.Errorf("attach source: %w", err)
		}
		s.setNames(id)
	}
	var triggers int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN (?, ?)`,
		s.insTrigger, s.updTrigger).Scan(&triggers); err != nil {
		return false, fmt.Errorf("attach source: %w", err)
	}
	if triggers != 2 {
		fresh = true // rows may have been written without being logged
	}
	if err := exec(`CREATE TABLE IF NOT EXISTS ` + s.logTable + ` (seq INTEGER PRIMARY KEY, key TEXT NOT NULL)`); err != nil {
		return false, err
	}
	if err := exec(`CREATE TABLE IF NOT EXISTS ` + s.aliasTable + ` (canon TEXT NOT NULL, stored TEXT NOT NULL, PRIMARY KEY (canon, stored)) WITHOUT ROWID`); err != nil {
		return false, err
	}
	for _, tr := range []struct{ name, event string }{{s.insTrigger, "INSERT"}, {s.updTrigger, "UPDATE OF " + s.qCol}} {
		if err := exec(`CREATE TRIGGER IF NOT EXISTS ` + tr.name + ` AFTER ` + tr.event + ` ON ` + s.qTable +
			` WHEN NEW.` + s.qCol + ` IS NOT NULL BEGIN INSERT INTO ` + s.logTable + ` (key) VALUES (NEW.` + s.qCol + `); END`); err != nil {
			return false, err
		}
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("attach source: %w", err)
	}
	s.attached = true
	return fresh, nil
}

func (s *store) prepare(ctx context.Context) (err error) {
	prep := func(db *sql.DB, q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		if st, err = db.PrepareContext(ctx, q); err != nil {
			err = fmt.Errorf("prepare statement: %w", err)
		}
		return st
	}
	headQuery := `SELECT 0, 0, 0`
	if s.attached {
		headQuery = `SELECT
		coalesce((SELECT max(seq) FROM ` + s.logTable + `), 0),
		(SELECT log_floor FROM ` + sourcesTable + ` WHERE id = ` + strconv.FormatInt(s.id, 10) + `),
		EXISTS (SELECT 1 FROM ` + s.aliasTable + `)`
	}
	s.headQuery = headQuery
	s.existsStmt = prep(s.r, `SELECT EXISTS (SELECT 1 FROM `+s.qTable+` WHERE `+s.qCol+` = ?1)`)
	if s.attached {
		s.fetchedStmt = prep(s.r, `SELECT EXISTS (SELECT 1 FROM `+s.qTable+` WHERE `+s.qCol+` = ?1)
		OR EXISTS (SELECT 1 FROM `+s.aliasTable+` a WHERE a.canon = ?1
			AND EXISTS (SELECT 1 FROM `+s.qTable+` t WHERE t.`+s.qCol+` = a.stored))`)
	}
	if !s.readOnly {
		s.aliasStmt = prep(s.w, `INSERT OR IGNORE INTO `+s.aliasTable+` (canon, stored) VALUES (?, ?)`)
	}
	if err == nil {
		s.gen, err = newGenReader(ctx, s.r, headQuery)
	}
	if err == nil && s.walMode(ctx) {
		s.gen.wal = mapWalIndex(s.path)
	}
	return err
}

// walMode reports whether the database is in WAL mode: only then does
// the wal-index say when a transaction commits. (Leaving WAL needs every
// other connection closed, and the index keeps one open.)
func (s *store) walMode(ctx context.Context) bool {
	var mode string
	return s.r.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode) == nil && strings.EqualFold(mode, "wal")
}

// head returns the newest log sequence number (the generation of the
// source) and the log floor (rows at or below it may have been deleted).
func (s *store) head(ctx context.Context) (head, floor uint64, err error) {
	v, err := s.generation(ctx)
	return v.head, v.floor, err
}

// generation returns the generation, the floor and whether the alias
// table had rows, as of a moment during the call.
func (s *store) generation(ctx context.Context) (genValue, error) {
	if err := ctx.Err(); err != nil {
		return genValue{}, err
	}
	return s.gen.read()
}

// logSince streams the keys logged with after < seq <= upTo, in order.
func (s *store) logSince(ctx context.Context, after, upTo uint64, each func(key string) error) error {
	rows, err := s.r.QueryContext(ctx, `SELECT key FROM `+s.logTable+` WHERE seq > ? AND seq <= ? ORDER BY seq`, int64(after), int64(upTo))
	if err != nil {
		return fmt.Errorf("read log: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			return fmt.Errorf("read log: %w", err)
		}
		if err := each(key); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read log: %w", err)
	}
	return nil
}

// noteAliases records stored non-NFC spellings under their canonical form.
func (s *store) noteAliases(ctx context.Context, pairs [][2]string) error {
	if len(pairs) == 0 {
		return nil
	}
	if s.readOnly {
		s.mem.add(pairs)
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("note aliases: %w", err)
	}
	s.notedAliases.Store(true)
	st := tx.StmtContext(ctx, s.aliasStmt)
	for _, p := range pairs {
		if _, err := st.ExecContext(ctx, p[0], p[1]); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("note aliases: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("note aliases: %w", err)
	}
	return nil
}

// markScanned records that a full scan completed, so the alias table holds
// every stored non-NFC spelling the log does not.
func (s *store) markScanned(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, `UPDATE `+sourcesTable+` SET scanned = 1 WHERE id = ?`, s.id); err != nil {
		return fmt.Errorf("mark scanned: %w", err)
	}
	return nil
}

// compactLog deletes log rows up to upTo and raises the floor, so that a
// process whose filter is older knows it must rebuild.
func (s *store) compactLog(ctx context.Context, upTo uint64) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	// A scan in progress (here or in another process) will catch up from
	// its generation: keep what it needs.
	upTo, err = s.leaseFloor(ctx, tx, upTo)
	if err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE `+sourcesTable+` SET log_floor = max(log_floor, ?) WHERE id = ?`, int64(upTo), s.id); err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	// The newest entry always stays: without AUTOINCREMENT, SQLite numbers
	// a new row one past the largest, so the sequence never goes back.
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+s.logTable+` WHERE seq <= ? AND seq < (SELECT max(seq) FROM `+s.logTable+`)`, int64(upTo)); err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+s.aliasTable+` WHERE NOT EXISTS (SELECT 1 FROM `+s.qTable+` t WHERE t.`+s.qCol+` = stored)`); err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	return nil
}

// now is the clock for snapshot creation times.
var now = func() time.Time { return time.Now().UTC() }

// beginWrite starts a write transaction (BEGIN IMMEDIATE) on the writer.
func (s *store) beginWrite(ctx context.Context) (*sql.Tx, error) {
	return s.w.BeginTx(ctx, nil)
}

// insertOwn inserts canonical keys into the library's own table in tx.
func (s *store) insertOwn(ctx context.Context, tx *sql.Tx, canon []string) error {
	stmt, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO `+s.qTable+` (`+s.qCol+`) VALUES (?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, c := range canon {
		if _, err := stmt.ExecContext(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// scanHooks are what a scan reports, in this order: begin, once, before
// any row, with the generation and a cheap estimate of the rows (the
// largest rowid; 0 when there is none), for progress only; then row for
// every text key.
type scanHooks struct {
	begin func(gen uint64, estimate int64) error
	row   func(key string) error
}

// scan reads the source in one read transaction: first the generation
// (handed to begin with an estimate of the rows), then every key, in
// table order, handed to row. NULL and BLOB ids are counted, not handed
// over (no text query can equal them): the counts come back at the end.
// began reports whether begin was called. The transaction fixes the
// database's state at its first statement, which reads the generation:
// every row committed up to it is scanned, everything later is in the
// log after it.
//
// Keys are read in chunks through the column's index when SQLite walks it
// for the paging statement (scanChunked), in the index's order; otherwise
// row by row through the driver, on a connection of the pool held for the
// scan, with one reused value slice (below the per-row cost of
// database/sql's Rows), in table order. ctx is checked every 4,096 rows.
func (s *store) scan(ctx context.Context, h scanHooks) (nulls, blobs int64, began bool, err error) {
	conn, err := s.r.Conn(ctx)
	if err != nil {
		return 0, 0, false, fmt.Errorf("scan source: %w", err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		begin, ok1 := dc.(driver.ConnBeginTx)
		prep, ok2 := dc.(driver.ConnPrepareContext)
		if !ok1 || !ok2 {
			return errors.New("driver cannot begin or prepare with a context")
		}
		tx, err := begin.BeginTx(ctx, driver.TxOptions{})
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		head, err := driverFirst(ctx, prep, s.headQuery, 3)
		if err != nil {
			return err
		}
		var estimate int64
		if last, err := driverFirst(ctx, prep, `SELECT max(_rowid_) FROM `+s.qTable, 1); err == nil { // fails WITHOUT ROWID
			estimate, _ = last[0].(int64)
		}
		gen, _ := head[0].(int64)
		began = true
		if err := h.begin(uint64(gen), max(estimate, 0)); err != nil {
			return err
		}
		if !noChunkedScan {
			ok, n, b, err := s.scanChunked(ctx, dc, h.row)
			if ok || err != nil {
				nulls, blobs = n, b
				return err
			}
		}
		rows, done, err := driverQuery(ctx, prep, `SELECT `+s.qCol+` FROM `+s.qTable)
		if err != nil {
			return err
		}
		defer done()
		return eachRow(ctx, rows, func(v driver.Value) error {
			switch v := v.(type) {
			case string:
				return h.row(v)
			case nil:
				nulls++
			case []byte:
				blobs++
			default: // a number in a TEXT column cannot be: affinity made it text
				return h.row(fmt.Sprint(v))
			}
			return nil
		})
	})
	if err != nil {
		return 0, 0, began, fmt.Errorf("scan source: %w", err)
	}
	return nulls, blobs, began, nil
}

// noDatabase is a database file that is not there (or not reachable): the
// source is missing with it (errors.Is ErrNoSource), and the cause stays
// visible (errors.Is os.ErrNotExist).
type noDatabase struct {
	path string
	err  error
}

func (e *noDatabase) Error() string {
	if errors.Is(e.err, os.ErrNotExist) {
		return e.path + " does not exist (the library never creates an app's database)"
	}
	return e.err.Error()
}

func (e *noDatabase) Unwrap() []error { return []error{e.err, ErrNoSource} }
