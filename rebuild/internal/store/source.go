package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/syncfilter/syncfilter/normalize"
)

// Names of the library's shared objects in the database.
const (
	SourcesTable   = "syncfilter_sources"
	SnapshotsTable = "syncfilter_snapshots"
	ScansTable     = "syncfilter_scans"
	OwnTable       = "syncfilter_fetched"
	OwnColumn      = "key"
)

const maxNameLen = 128

// CheckName accepts identifiers of letters, digits (not first), '_' and
// '$', at most 128 bytes, outside SQLite's "sqlite_" namespace; names are
// quoted in SQL as well (Quote).
func CheckName(kind, name string) error {
	bad := func(why string) error {
		return fmt.Errorf("check %s name %q: %s: %w", kind, name, why, ErrBadConfig)
	}
	switch {
	case name == "":
		return bad("empty")
	case len(name) > maxNameLen:
		return bad(fmt.Sprintf("longer than %d bytes", maxNameLen))
	case !utf8.ValidString(name):
		return bad("not valid UTF-8")
	case strings.HasPrefix(strings.ToLower(name), "sqlite_"):
		return bad(`the "sqlite_" prefix is reserved`)
	}
	for i, r := range name {
		switch {
		case r == '_' || r == '$' || unicode.IsLetter(r):
		case unicode.IsDigit(r) && i > 0:
		default:
			return bad(fmt.Sprintf("character %q at byte %d", r, i))
		}
	}
	return nil
}

// Quote returns name as an identifier in backquotes: SQLite reads a
// double-quoted name that names nothing as a string literal, so after the
// app dropped the column `WHERE "id" = ?` would answer "fetched" for the
// key "id"; a backquoted name fails instead.
func Quote(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// mainTable returns table quoted in the main schema: the app may give its
// connections, where the library's statements may run, a TEMP table of the
// same name. (A trigger's table cannot be qualified; it is in main.)
func mainTable(table string) string { return inMain(Quote(table)) }

// inMain qualifies one of the library's own names (no quotes needed).
func inMain(name string) string { return "main." + name }

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

	// Key is the key of the positions of every filter the library builds
	// for the source (random, made by Attach; never written to a file),
	// if Keyed: a row of before the key has none until its next attach.
	// Lowest is the lowest snapshot format version the database accepts.
	Key    [32]byte
	Keyed  bool
	Lowest int

	// Policy is how the source compares ids (syncfilter.Compare.Policy),
	// as the database records it; "nfc/1" for a row of before the record.
	Policy string

	// Version is the column holding each record's version ("": none), as
	// SQLite stores its name; QVer quoted; VerInt: of INTEGER affinity
	// (else TEXT). VersionErr says why it cannot order versions exactly
	// (missing, generated, another type or collation): Need's error, not
	// the by-id calls'.
	Version, QVer string
	VerInt        bool
	VersionErr    error

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

	plain bool // the statements' plain dialect (dialect.go)
}

// stmtKey is a statement of the hot paths, built once per source.
type stmtKey interface{ build(s *Source) string }

type headStmt struct{}
type lookupStmt struct{}

func (headStmt) build(s *Source) string   { return s.headSQL() }
func (lookupStmt) build(s *Source) string { return s.lookupSQL() }
func (k confirmShape) build(s *Source) string {
	keys := "?1"
	switch {
	case k.size > 0: // plain: ?1 unused, ?2 the spellings'
		keys = s.keysFrom(3, k.size)
	case !k.single:
		keys = s.keysFrom(1, 0)
	}
	if k.versioned {
		return s.versionsSQL(k.spellings, k.single, keys, "?2")
	}
	return s.confirmSQL(k.spellings, k.single, keys, "?2")
}
func (k probeShape) build(s *Source) string { return s.probeSQL(k) }

func (s *Source) sql(k stmtKey) string {
	if v, ok := s.stmts.Load(k); ok {
		return v.(string)
	}
	v, _ := s.stmts.LoadOrStore(k, k.build(s))
	return v.(string)
}

// Want is the source a collection names: its table and key column ("" and
// "": the library's own table), its optional version column, how it
// compares ids (Policy, syncfilter.Compare.Policy; "" checks nothing, as
// Detach asks) and whether an unindexed key column is accepted.
type Want struct {
	Table, Column, Version, Policy string
	AllowUnindexed                 bool
}

// Resolve finds the source in the schema, case-insensitively, and checks,
// reading only, that answers about it can be exact (checkTable) and that
// the database records it comparing ids by w.Policy (a source not
// attached yet will be).
func Resolve(ctx context.Context, q querier, w Want) (*Source, error) {
	table, column, allowUnindexed := w.Table, w.Column, w.AllowUnindexed
	s := &Source{Table: table, Column: column, Policy: w.Policy, Version: w.Version, plain: plainOf(q)}
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

// findRow reads the source's row in syncfilter_sources (names matched
// case-insensitively, as SQLite does) and whether its objects are in place.
func (s *Source) findRow(ctx context.Context, q querier) error {
	var ds, key []byte
	var attachedRow int64
	s.Lowest = 1
	want, recorded := s.Policy, normalize.Policy
	exists, err := hasTable(ctx, q, SourcesTable)
	var have columns
	if err == nil && exists {
		have, err = sourceColumns(ctx, q)
	}
	if err == nil && exists {
		cols, dest := `id, dataset_id, scanned, created_at, tbl_rowid`, []any{&s.ID, &ds, &s.Scanned, &s.CreatedAt, &attachedRow}
		if have.keyed {
			cols, dest = cols+`, positions_key, lowest_version`, append(dest, &key, &s.Lowest)
		}
		if have.compare {
			cols, dest = cols+`, compare`, append(dest, &recorded)
		}
		err = q.QueryRowContext(ctx, `SELECT `+cols+` FROM `+SourcesTable+`
		WHERE tbl = ? COLLATE NOCASE AND col = ? COLLATE NOCASE ORDER BY id LIMIT 1`, s.Table, s.Column).Scan(dest...)
	}
	switch {
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("find source: %w", err)
	case err != nil || !exists:
		return nil
	case len(ds) != len(s.DatasetID):
		return fmt.Errorf("find source: dataset id of %d bytes in %s", len(ds), SourcesTable)
	case key != nil && !keyFits(key, recorded):
		return fmt.Errorf("find source: key of %d bytes in %s for policy %s", len(key), SourcesTable, recorded)
	case want != "" && recorded != want: // Detach asks for none
		return fmt.Errorf("find source: %s.%s was attached comparing ids by %s, and is opened comparing by %s (Source.Compare): %w",
			s.Table, s.Column, recorded, want, ErrBadConfig)
	}
	copy(s.DatasetID[:], ds)
	s.Keyed = copy(s.Key[:], key) == len(s.Key)
	s.Policy = recorded
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

// columns says which later columns syncfilter_sources has: those of the
// key, and the record of how ids compare (a table created before them
// gets them at the next attach).
type columns struct{ keyed, compare bool }

func sourceColumns(ctx context.Context, q querier) (columns, error) {
	var c columns
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE name IN ('positions_key', 'lowest_version')), count(*) FILTER (WHERE name = 'compare')
		FROM pragma_table_info(?, 'main')`, SourcesTable).Scan(&n, &c.compare)
	c.keyed = n == 2
	return c, err
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
	Key           [32]byte
	Keyed         bool   // Key is the source's (a row of before the key has none)
	Policy        string // how it compares ids (Source.Policy)
}

// List returns the sources the database records, in the order they were
// first attached.
func List(ctx context.Context, q querier) ([]Listed, error) {
	if exists, err := hasTable(ctx, q, SourcesTable); err != nil || !exists {
		return nil, err
	}
	key, policy := `NULL`, `'`+normalize.Policy+`'`
	have, err := sourceColumns(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("list sources: %w", err)
	}
	if have.keyed {
		key = `positions_key`
	}
	if have.compare {
		policy = `compare`
	}
	rows, err := q.QueryContext(ctx, `SELECT tbl, col, dataset_id, created_at, coalesce(snapshot, ''), `+key+`, `+policy+` FROM `+SourcesTable+` ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list sources: %w", err)
	}
	defer rows.Close()
	var out []Listed
	for rows.Next() {
		var l Listed
		var ds, key []byte
		if err := rows.Scan(&l.Table, &l.Column, &ds, &l.CreatedAt, &l.Snapshot, &key, &l.Policy); err != nil {
			return nil, fmt.Errorf("list sources: %w", err)
		}
		copy(l.DatasetID[:], ds)
		l.Keyed = copy(l.Key[:], key) == len(l.Key)
		out = append(out, l)
	}
	return out, rows.Err()
}
