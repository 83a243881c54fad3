package rebuild

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

	table, column string // as configured
	qTable, qCol  string // quoted
	own           bool   // the library's own table
	id            int64  // row of the source in syncfilter_sources
	datasetID     [16]byte
	logTable      string // syncfilter_log_<id>: keys inserted, in commit order
	aliasTable    string // syncfilter_alias_<id>: canonical key → stored non-NFC spelling

	headStmt, fetchedStmt, confirmStmt, aliasStmt *sql.Stmt
	gen                                           *genReader // the per-call generation check
}

// confirmChunk is how many keys one confirming query carries (well within
// SQLite's 32,766 variables); a short last chunk repeats its last key, so
// one prepared statement serves every chunk.
const confirmChunk = 256

// dsn builds a SQLite URI for path with the driver's options. '%', '?' and
// '#' in the path are escaped so that they stay part of the file name.
func dsn(path string, opts string) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(filepath.ToSlash(path))
	return "file:" + esc + "?" + opts
}

// openStore opens the database, creates the library's objects if needed
// and checks the source. fresh reports that the log cannot vouch for the
// past (first attach, or triggers found missing): the filter must be built
// by a full scan.
func openStore(ctx context.Context, cfg *Config) (s *store, fresh bool, err error) {
	// An app's table lives in an existing database: never create an empty
	// file for a mistyped path. The library's own table may start one.
	mode := "rwc"
	if cfg.Table != "" {
		mode = "rw"
		if _, err := os.Stat(cfg.Path); err != nil {
			return nil, false, fmt.Errorf("open database: %w (%w)", err, ErrNoSource)
		}
	}
	busy := strconv.FormatInt(cfg.BusyTimeout.Milliseconds(), 10)
	w, err := sql.Open("sqlite3", dsn(cfg.Path, "mode="+mode+"&_journal_mode=WAL&_txlock=immediate&_busy_timeout="+busy))
	if err != nil {
		return nil, false, fmt.Errorf("open database: %w", err)
	}
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite3", dsn(cfg.Path, "mode=rw&_busy_timeout="+busy))
	if err != nil {
		_ = w.Close()
		return nil, false, fmt.Errorf("open database: %w", err)
	}
	r.SetMaxOpenConns(cfg.Readers + 1) // one is the generation reader's
	r.SetMaxIdleConns(cfg.Readers + 1)
	st := &store{w: w, r: r, table: cfg.Table, column: cfg.Column}
	defer func() {
		if err != nil {
			st.close()
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
	if fresh, err = s.attach(ctx); err != nil {
		return nil, false, err
	}
	if err := s.checkSource(ctx, cfg.AllowUnindexed); err != nil {
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
	for _, st := range []*sql.Stmt{s.headStmt, s.fetchedStmt, s.confirmStmt, s.aliasStmt} {
		if st != nil {
			_ = st.Close()
		}
	}
	_ = s.r.Close()
	_ = s.w.Close()
}

// attach registers the source in syncfilter_sources (with a new random
// dataset id the first time) and creates its log, alias table and
// triggers, all in one write transaction.
func (s *store) attach(ctx context.Context) (fresh bool, err error) {
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
	if err := exec(`CREATE TABLE IF NOT EXISTS ` + sourcesTable + ` (
		id         INTEGER PRIMARY KEY AUTOINCREMENT,
		tbl        TEXT NOT NULL,
		col        TEXT NOT NULL,
		dataset_id BLOB NOT NULL,
		log_floor  INTEGER NOT NULL DEFAULT 0,
		scanned    INTEGER NOT NULL DEFAULT 0,
		created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
		UNIQUE (tbl, col))`); err != nil {
		return false, err
	}
	if s.own {
		if err := exec(`CREATE TABLE IF NOT EXISTS ` + quote(ownTable) + ` (` + quote(ownColumn) + ` TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID`); err != nil {
			return false, err
		}
	}
	var ds []byte
	var scanned bool
	err = tx.QueryRowContext(ctx, `SELECT id, dataset_id, scanned FROM `+sourcesTable+` WHERE tbl = ? AND col = ?`, s.table, s.column).Scan(&s.id, &ds, &scanned)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		fresh = true
		_, _ = rand.Read(s.datasetID[:])
		res, err := tx.ExecContext(ctx, `INSERT INTO `+sourcesTable+` (tbl, col, dataset_id) VALUES (?, ?, ?)`, s.table, s.column, s.datasetID[:])
		if err != nil {
			return false, fmt.Errorf("attach source: %w", err)
		}
		if s.id, err = res.LastInsertId(); err != nil {
			return false, fmt.Errorf("attach source: %w", err)
		}
	case err != nil:
		return false, fmt.Errorf("attach source: %w", err)
	case len(ds) != len(s.datasetID):
		return false, fmt.Errorf("attach source: dataset id of %d bytes in %s", len(ds), sourcesTable)
	default:
		copy(s.datasetID[:], ds)
		fresh = !scanned // no full scan has completed since the source was attached
	}
	id := strconv.FormatInt(s.id, 10)
	s.logTable, s.aliasTable = "syncfilter_log_"+id, "syncfilter_alias_"+id
	var triggers int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN (?, ?)`,
		"syncfilter_ins_"+id, "syncfilter_upd_"+id).Scan(&triggers); err != nil {
		return false, fmt.Errorf("attach source: %w", err)
	}
	if triggers != 2 {
		fresh = true // rows may have been written without being logged
	}
	if err := exec(`CREATE TABLE IF NOT EXISTS ` + s.logTable + ` (seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL)`); err != nil {
		return false, err
	}
	if err := exec(`CREATE TABLE IF NOT EXISTS ` + s.aliasTable + ` (canon TEXT NOT NULL, stored TEXT NOT NULL, PRIMARY KEY (canon, stored)) WITHOUT ROWID`); err != nil {
		return false, err
	}
	for _, tr := range []struct{ name, event string }{{"syncfilter_ins_" + id, "INSERT"}, {"syncfilter_upd_" + id, "UPDATE OF " + s.qCol}} {
		q := `CREATE TRIGGER IF NOT EXISTS ` + tr.name + ` AFTER ` + tr.event + ` ON ` + s.qTable +
			` WHEN NEW.` + s.qCol + ` IS NOT NULL BEGIN INSERT INTO ` + s.logTable + ` (key) VALUES (NEW.` + s.qCol + `); END`
		if err := exec(q); err != nil {
			if strings.Contains(err.Error(), "no such table") || strings.Contains(err.Error(), "no such column") {
				return false, fmt.Errorf("attach source %s.%s: %w", s.table, s.column, ErrNoSource)
			}
			return false, err
		}
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("attach source: %w", err)
	}
	return fresh, nil
}

// checkSource makes sure the table and column exist and that a lookup by
// key uses an index.
func (s *store) checkSource(ctx context.Context, allowUnindexed bool) error {
	rows, err := s.r.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, s.table)
	if err != nil {
		return fmt.Errorf("check source: %w", err)
	}
	found := false
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return fmt.Errorf("check source: %w", err)
		}
		found = found || strings.EqualFold(name, s.column)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("check source: %w", err)
	}
	if !found {
		return fmt.Errorf("check source %s.%s: %w", s.table, s.column, ErrNoSource)
	}
	if allowUnindexed {
		return nil
	}
	plan, err := s.r.QueryContext(ctx, `EXPLAIN QUERY PLAN SELECT 1 FROM `+s.qTable+` WHERE `+s.qCol+` = ?`, "")
	if err != nil {
		return fmt.Errorf("check source: %w", err)
	}
	defer plan.Close()
	for plan.Next() {
		var id, parent, unused int
		var detail string
		if err := plan.Scan(&id, &parent, &unused, &detail); err != nil {
			return fmt.Errorf("check source: %w", err)
		}
		if strings.HasPrefix(detail, "SCAN") {
			return fmt.Errorf("check source %s.%s: lookups would %s: %w", s.table, s.column, strings.ToLower(detail), ErrNotIndexed)
		}
	}
	return plan.Err()
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
	headQuery := `SELECT
		coalesce((SELECT seq FROM sqlite_sequence WHERE name = '` + s.logTable + `'), 0),
		(SELECT log_floor FROM ` + sourcesTable + ` WHERE id = ` + strconv.FormatInt(s.id, 10) + `)`
	s.headStmt = prep(s.r, headQuery)
	s.fetchedStmt = prep(s.r, `SELECT EXISTS (SELECT 1 FROM `+s.qTable+` WHERE `+s.qCol+` = ?1)
		OR EXISTS (SELECT 1 FROM `+s.aliasTable+` a WHERE a.canon = ?1
			AND EXISTS (SELECT 1 FROM `+s.qTable+` t WHERE t.`+s.qCol+` = a.stored))`)
	params := make([]string, confirmChunk)
	for i := range params {
		params[i] = "?" + strconv.Itoa(i+1)
	}
	in := "(" + strings.Join(params, ", ") + ")"
	s.confirmStmt = prep(s.r, `SELECT `+s.qCol+` FROM `+s.qTable+` WHERE `+s.qCol+` IN `+in+`
		UNION ALL
		SELECT a.canon FROM `+s.aliasTable+` a WHERE a.canon IN `+in+`
			AND EXISTS (SELECT 1 FROM `+s.qTable+` t WHERE t.`+s.qCol+` = a.stored)`)
	s.aliasStmt = prep(s.w, `INSERT OR IGNORE INTO `+s.aliasTable+` (canon, stored) VALUES (?, ?)`)
	if err == nil {
		s.gen, err = newGenReader(ctx, s.r, headQuery)
	}
	return err
}

// head returns the newest log sequence number (the generation of the
// source) and the log floor (rows at or below it may have been deleted).
func (s *store) head(ctx context.Context) (head, floor uint64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
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
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("note aliases: %w", err)
	}
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
	if _, err := tx.ExecContext(ctx, `UPDATE `+sourcesTable+` SET log_floor = max(log_floor, ?) WHERE id = ?`, int64(upTo), s.id); err != nil {
		return fmt.Errorf("compact log: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+s.logTable+` WHERE seq <= ?`, int64(upTo)); err != nil {
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
