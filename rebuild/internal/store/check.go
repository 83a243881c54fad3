package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

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
	if err := s.checkExact(ctx, q, declared); err != nil {
		return err
	}
	if s.VersionErr, err = s.checkVersion(ctx, q); err != nil { // VersionErr is Need's alone
		return err
	}
	if allowUnindexed {
		return nil
	}
	return s.checkIndexed(ctx, q)
}

// checkVersion checks the version column, if the source names one, and
// returns why Need cannot use it (err: the check itself failed): it must
// be a
// stored column other than the key, of INTEGER or TEXT affinity,
// compared under BINARY (so that SQLite's own >= orders versions as the
// app stored them: numbers as numbers, text byte by byte).
func (s *Source) checkVersion(ctx context.Context, q querier) (unusable, err error) {
	if s.Version == "" {
		return nil, nil
	}
	var col, declared string
	var hidden int
	err = q.QueryRowContext(ctx, `SELECT name, type, hidden FROM pragma_table_xinfo(?) WHERE name = ? COLLATE NOCASE`, s.Table, s.Version).Scan(&col, &declared, &hidden)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("check source: no version column %q in table %q: %w", s.Version, s.Table, ErrNoSource), nil
	case err != nil:
		return nil, fmt.Errorf("check source: %w", err)
	case strings.EqualFold(col, s.Column):
		return fmt.Errorf("check source: the version column %s is the key column: %w", col, ErrBadConfig), nil
	case hidden == 2 || hidden == 3:
		return fmt.Errorf("check source: version column %s.%s is generated: name a stored column: %w", s.Table, col, ErrInexactColumn), nil
	}
	s.Version, s.QVer = col, Quote(col)
	switch a := affinity(declared); a {
	case "INTEGER", "TEXT":
		s.VerInt = a == "INTEGER"
	default:
		return fmt.Errorf("check source: version column %s.%s is declared %q (%s affinity): declare it INTEGER, or TEXT: %w",
			s.Table, col, declared, a, ErrInexactColumn), nil
	}
	coll, err := s.collation(ctx, q, s.QVer, col)
	switch {
	case errors.Is(err, ErrInexactColumn):
		return err, nil
	case err != nil:
		return nil, err
	case !strings.EqualFold(coll, "BINARY"):
		return fmt.Errorf("check source: version column %s.%s compares under the collation %s, which may order versions otherwise than their bytes; declare it without COLLATE (or COLLATE BINARY): %w",
			s.Table, col, coll, ErrInexactColumn), nil
	}
	return nil, nil
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
	coll, err := s.collation(ctx, q, s.QCol, s.Column)
	if err == nil && !strings.EqualFold(coll, "BINARY") {
		err = fmt.Errorf("check source: column %s.%s compares ids under the collation %s, which may equate different ids, so a never-fetched id could be confirmed as fetched; declare it TEXT without COLLATE (or COLLATE BINARY): %w",
			s.Table, s.Column, coll, ErrInexactColumn)
	}
	return err
}

// collation returns the collation of `column = ?`, named by the Eq or Ne
// instruction of EXPLAIN SELECT column = ? (no pair of test values tells
// every collation an app may define).
func (s *Source) collation(ctx context.Context, q querier, qcol, column string) (string, error) {
	rows, err := q.QueryContext(ctx, `EXPLAIN SELECT `+qcol+` = ? FROM `+s.QTable, "")
	if err != nil {
		if strings.Contains(err.Error(), "collation") { // one the library's connections do not have
			return "", fmt.Errorf("check source: column %s.%s: %v: only BINARY compares exactly; declare it without COLLATE (or COLLATE BINARY): %w",
				s.Table, column, err, ErrInexactColumn)
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
		return "", fmt.Errorf("check source: column %s.%s: cannot tell which collation compares it (comparisons %q): %w",
			s.Table, column, found, ErrInexactColumn)
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
