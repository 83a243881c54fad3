package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// Names of the library's shared objects in the database.
const (
	SourcesTable   = "syncfilter_sources"
	SnapshotsTable = "syncfilter_snapshots"
	ScansTable     = "syncfilter_scans"
	OwnTable       = "syncfilter_fetched"
	OwnColumn      = "key"
)

// querier is a *sql.DB, a *Tx or a Conn.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// hasTable reports whether the database has a table named name.
func hasTable(ctx context.Context, q querier, name string) (bool, error) {
	var ok bool
	err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)`, name).Scan(&ok)
	return ok, err
}

// Source is a table and its key column as the schema stood when it was
// resolved, with the library's row and objects if attached. It never
// changes once returned: resolve it again after the schema changed.
type Source struct {
	Table, Column string // as SQLite stores them
	QTable, QCol  string // quoted; QTable in the main schema (mainTable), for every statement but a trigger's
	Own           bool   // the library's own table
	OwnMissing    bool   // ... which does not exist yet (Attach creates it)

	Row       bool // the source has a row in syncfilter_sources
	ID        int64
	DatasetID [16]byte
	CreatedAt string // when the source was first attached (UTC, RFC 3339)
	Scanned   bool   // a full scan completed since the last (re)attach

	// Logged: both triggers exist exactly as created, the log and
	// spellings tables exist, and the table is the one attached: every
	// write since the attach is in the log.
	Logged bool

	// tableRow is the table's rowid in sqlite_master. A table created
	// again under its name (SQLite's 12-step migration), even with the
	// triggers recreated from their text, has another, and rows copied into
	// it before the triggers existed are in no log.
	tableRow int64

	Log, Spellings, Ins, Upd string // the source's object names (from ID)

	stmts sync.Map // stmtKey → statement, built at first use (sql)
}

// stmtKey is a statement of the hot paths, built once per source.
type stmtKey interface{ build(s *Source) string }

type headStmt struct{}
type lookupStmt struct{}

func (headStmt) build(s *Source) string       { return s.headSQL() }
func (lookupStmt) build(s *Source) string     { return s.lookupSQL() }
func (k confirmShape) build(s *Source) string { return s.confirmSQL(k.spellings, k.single, "?1", "?2") }
func (k probeShape) build(s *Source) string   { return s.probeSQL(k) }

func (s *Source) sql(k stmtKey) string {
	if v, ok := s.stmts.Load(k); ok {
		return v.(string)
	}
	v, _ := s.stmts.LoadOrStore(k, k.build(s))
	return v.(string)
}

// Resolve finds the source in the schema, case-insensitively, and checks,
// reading only, that answers about it can be exact (checkTable). An empty
// table names the library's own table.
func Resolve(ctx context.Context, q querier, table, column string, allowUnindexed bool) (*Source, error) {
	s := &Source{Table: table, Column: column}
	if table == "" {
		s.Table, s.Column, s.Own = OwnTable, OwnColumn, true
		exists, err := hasTable(ctx, q, OwnTable)
		if err != nil {
			return nil, fmt.Errorf("check source: %w", err)
		}
		s.OwnMissing = !exists
	}
	s.QTable, s.QCol = mainTable(s.Table), Quote(s.Column)
	if !s.OwnMissing { // Attach creates the library's own table right
		if err := s.checkTable(ctx, q, allowUnindexed); err != nil {
			return nil, err
		}
	}
	if err := s.findRow(ctx, q); err != nil {
		return nil, err
	}
	return s, nil
}

// checkTable checks for a table (not a view or a virtual table, which no
// trigger logs), a stored column (an UPDATE of what a generated one is
// computed from fires no UPDATE OF trigger), exact comparison (checkExact)
// and an index for `column = ?` (checkIndexed).
func (s *Source) checkTable(ctx context.Context, q querier, allowUnindexed bool) error {
	var typ, name, ddl string
	err := q.QueryRowContext(ctx, `SELECT type, name, coalesce(sql, ''), rowid FROM sqlite_master
		WHERE name = ? COLLATE NOCASE AND type IN ('table', 'view') ORDER BY type = 'table' DESC LIMIT 1`, s.Table).Scan(&typ, &name, &ddl, &s.tableRow)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("check source: no table %q: %w", s.Table, ErrNoSource)
	case err != nil:
		return fmt.Errorf("check source: %w", err)
	case typ != "table":
		return fmt.Errorf("check source: %q is a %s, not a table: %w", name, typ, ErrNoSource)
	case strings.HasPrefix(strings.ToUpper(strings.Join(strings.Fields(ddl), " ")), "CREATE VIRTUAL TABLE"):
		return fmt.Errorf("check source: %q is a virtual table (no triggers can log its rows): %w", name, ErrNoSource)
	}
	var col, declared string
	var hidden int
	err = q.QueryRowContext(ctx, `SELECT name, type, hidden FROM pragma_table_xinfo(?) WHERE name = ? COLLATE NOCASE`, name, s.Column).Scan(&col, &declared, &hidden)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("check source: no column %q in table %q: %w", s.Column, name, ErrNoSource)
	case err != nil:
		return fmt.Errorf("check source: %w", err)
	case hidden == 2 || hidden == 3:
		return fmt.Errorf("check source: column %s.%s is generated: an UPDATE of the columns it is computed from changes its value without firing an UPDATE OF trigger, so new ids could go unlogged; key the source by a stored column: %w",
			name, col, ErrInexactColumn)
	}
	s.Table, s.Column = name, col
	s.QTable, s.QCol = mainTable(name), Quote(col)
	if err := s.checkExact(ctx, q, declared); err != nil || allowUnindexed {
		return err
	}
	return s.checkIndexed(ctx, q)
}

// affinity returns the type affinity of a column declared typ
// (sqlite.org/datatype3.html, section 3.1, rules in order).
func affinity(typ string) string {
	t := strings.ToUpper(typ)
	switch {
	case strings.Contains(t, "INT"):
		return "INTEGER"
	case strings.Contains(t, "CHAR"), strings.Contains(t, "CLOB"), strings.Contains(t, "TEXT"):
		return "TEXT"
	case strings.Contains(t, "BLOB"), t == "":
		return "BLOB"
	case strings.Contains(t, "REAL"), strings.Contains(t, "FLOA"), strings.Contains(t, "DOUB"):
		return "REAL"
	}
	return "NUMERIC"
}

// checkExact refuses a column whose comparison with a TEXT parameter is
// not byte equality: another affinity converts ids ('007' stored as 7
// matches "7"; a BLOB never equals text), another collation equates
// different ids (NOCASE, RTRIM, or the app's own, which a driver such as
// modernc registers on the library's connections too).
func (s *Source) checkExact(ctx context.Context, q querier, declared string) error {
	if a := affinity(declared); a != "TEXT" {
		return fmt.Errorf("check source: column %s.%s is declared %q (%s affinity): SQLite would convert or mismatch ids, so answers could not be exact; declare it TEXT: %w",
			s.Table, s.Column, declared, a, ErrInexactColumn)
	}
	coll, err := s.collation(ctx, q)
	if err == nil && !strings.EqualFold(coll, "BINARY") {
		err = fmt.Errorf("check source: column %s.%s compares ids under the collation %s, which may equate different ids, so a never-fetched id could be confirmed as fetched; declare it TEXT without COLLATE (or COLLATE BINARY): %w",
			s.Table, s.Column, coll, ErrInexactColumn)
	}
	return err
}

// collation returns the collation of `column = ?`, named by the Eq or Ne
// instruction of EXPLAIN SELECT column = ? (no pair of test values tells
// every collation an app may define).
func (s *Source) collation(ctx context.Context, q querier) (string, error) {
	rows, err := q.QueryContext(ctx, `EXPLAIN SELECT `+s.QCol+` = ? FROM `+s.QTable, "")
	if err != nil {
		if strings.Contains(err.Error(), "collation") { // one the library's connections do not have
			return "", fmt.Errorf("check source: column %s.%s: %v: only BINARY compares ids exactly; declare it TEXT without COLLATE (or COLLATE BINARY): %w",
				s.Table, s.Column, err, ErrInexactColumn)
		}
		return "", fmt.Errorf("check source: %w", err)
	}
	defer rows.Close()
	var found []string
	for rows.Next() {
		var addr, p1, p2, p3, p5 int64
		var op, p4, comment sql.NullString
		if err := rows.Scan(&addr, &op, &p1, &p2, &p3, &p4, &p5, &comment); err != nil {
			return "", fmt.Errorf("check source: read the comparison's collation: %w", err)
		}
		if op.String == "Eq" || op.String == "Ne" {
			name, _, _ := strings.Cut(p4.String, "-") // "BINARY-8": the encoding after '-'
			found = append(found, name)
		}
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("check source: read the comparison's collation: %w", err)
	}
	if len(found) != 1 || found[0] == "" {
		return "", fmt.Errorf("check source: column %s.%s: cannot tell which collation compares ids (comparisons %q): %w",
			s.Table, s.Column, found, ErrInexactColumn)
	}
	return found[0], nil
}

// checkIndexed refuses a column SQLite would look a key up in by scanning
// the table.
func (s *Source) checkIndexed(ctx context.Context, q querier) error {
	plan, err := queryPlan(ctx, q, `SELECT 1 FROM `+s.QTable+` WHERE `+s.QCol+` = ?`, "")
	if err != nil {
		return fmt.Errorf("check source: %w", err)
	}
	for _, detail := range plan {
		if strings.HasPrefix(detail, "SCAN") {
			return fmt.Errorf("check source: %s.%s: lookups would %s; create an index on (%s) or set AllowUnindexed: %w",
				s.Table, s.Column, strings.ToLower(detail), s.Column, ErrNotIndexed)
		}
	}
	return nil
}

// queryPlan returns the details of SQLite's query plan for stmt.
func queryPlan(ctx context.Context, q querier, stmt string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, `EXPLAIN QUERY PLAN `+stmt, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return nil, err
		}
		out = append(out, detail)
	}
	return out, rows.Err()
}

// findRow reads the source's row in syncfilter_sources (names matched
// case-insensitively, as SQLite does) and whether its objects are in place.
func (s *Source) findRow(ctx context.Context, q querier) error {
	var ds []byte
	var attachedRow int64
	exists, err := hasTable(ctx, q, SourcesTable)
	if err == nil && exists {
		err = q.QueryRowContext(ctx, `SELECT id, dataset_id, scanned, created_at, tbl_rowid FROM `+SourcesTable+`
		WHERE tbl = ? COLLATE NOCASE AND col = ? COLLATE NOCASE ORDER BY id LIMIT 1`, s.Table, s.Column).Scan(&s.ID, &ds, &s.Scanned, &s.CreatedAt, &attachedRow)
	}
	switch {
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("find source: %w", err)
	case err != nil || !exists:
		return nil
	case len(ds) != len(s.DatasetID):
		return fmt.Errorf("find source: dataset id of %d bytes in %s", len(ds), SourcesTable)
	}
	copy(s.DatasetID[:], ds)
	s.Row = true
	s.setNames(s.ID)
	if s.OwnMissing {
		return nil
	}
	found, err := s.objectsInPlace(ctx, q)
	if err != nil {
		return fmt.Errorf("find source: %w", err)
	}
	s.Logged = found == 4 && attachedRow == s.tableRow
	return nil
}

// objectsInPlace counts the source's triggers (as created) and tables.
func (s *Source) objectsInPlace(ctx context.Context, q querier) (int, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, type, coalesce(sql, '') FROM sqlite_master WHERE name IN (?, ?, ?, ?)`, s.Ins, s.Upd, s.Log, s.Spellings)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	found := 0
	for rows.Next() {
		var name, typ, text string
		if err := rows.Scan(&name, &typ, &text); err != nil {
			return 0, err
		}
		switch {
		case name == s.Ins && typ == "trigger" && text == s.triggerSQL(s.Ins, "INSERT"),
			name == s.Upd && typ == "trigger" && text == s.triggerSQL(s.Upd, "UPDATE OF "+s.QCol),
			(name == s.Log || name == s.Spellings) && typ == "table":
			found++
		}
	}
	return found, rows.Err()
}

// setNames derives the source's object names from its row id.
func (s *Source) setNames(id int64) {
	s.ID = id
	n := strconv.FormatInt(id, 10)
	s.Log, s.Spellings = "syncfilter_log_"+n, "syncfilter_spellings_"+n
	s.Ins, s.Upd = "syncfilter_ins_"+n, "syncfilter_upd_"+n
}

// triggerSQL is a trigger's text exactly as sqlite_master keeps it: the
// new id goes to the log with a random tag (Head.Tag).
func (s *Source) triggerSQL(name, event string) string {
	return `CREATE TRIGGER ` + name + ` AFTER ` + event + ` ON ` + Quote(s.Table) +
		` WHEN NEW.` + s.QCol + ` IS NOT NULL BEGIN INSERT INTO ` + s.Log + ` (key, tag) VALUES (NEW.` + s.QCol + `, random()); END`
}

// Listed is an attached source as syncfilter_sources records it.
type Listed struct {
	Table, Column string
	DatasetID     [16]byte
	CreatedAt     string
	Snapshot      string // the last snapshot recorded; "" if none
}

// List returns the sources the database records, in the order they were
// first attached.
func List(ctx context.Context, q querier) ([]Listed, error) {
	if exists, err := hasTable(ctx, q, SourcesTable); err != nil || !exists {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, `SELECT tbl, col, dataset_id, created_at, coalesce(snapshot, '') FROM `+SourcesTable+` ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list sources: %w", err)
	}
	defer rows.Close()
	var out []Listed
	for rows.Next() {
		var l Listed
		var ds []byte
		if err := rows.Scan(&l.Table, &l.Column, &ds, &l.CreatedAt, &l.Snapshot); err != nil {
			return nil, fmt.Errorf("list sources: %w", err)
		}
		copy(l.DatasetID[:], ds)
		out = append(out, l)
	}
	return out, rows.Err()
}
