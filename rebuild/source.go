package rebuild

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// This file checks a source before the library touches the database:
// every check here only reads. Names are resolved to the spelling SQLite
// stores (identifiers are case-insensitive in SQLite, so "MESSAGES" and
// "messages" are one table, one source), and the key column must compare
// exactly: TEXT affinity, BINARY collation, and (unless AllowUnindexed) an
// index SQLite uses for `column = ?`.

// resolveSource finds the configured table and column in the schema and
// replaces s.table and s.column by the names SQLite stores. q runs the
// queries: the writer before any write, or a read-only connection.
func (s *store) resolveSource(ctx context.Context, q querier, allowUnindexed bool) error {
	var typ, name, ddl string
	err := q.QueryRowContext(ctx, `SELECT type, name, coalesce(sql, '') FROM sqlite_master
		WHERE name = ? COLLATE NOCASE AND type IN ('table', 'view') ORDER BY type = 'table' DESC LIMIT 1`, s.table).Scan(&typ, &name, &ddl)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("check source: no table %q in %s: %w", s.table, s.path, ErrNoSource)
	case err != nil:
		return fmt.Errorf("check source: %w", err)
	case typ != "table":
		return fmt.Errorf("check source: %q is a %s, not a table: %w", name, typ, ErrNoSource)
	case strings.HasPrefix(strings.ToUpper(strings.Join(strings.Fields(ddl), " ")), "CREATE VIRTUAL TABLE"):
		return fmt.Errorf("check source: %q is a virtual table (no triggers can log its rows): %w", name, ErrNoSource)
	}
	var col, declared string
	err = q.QueryRowContext(ctx, `SELECT name, type FROM pragma_table_xinfo(?) WHERE name = ? COLLATE NOCASE`, name, s.column).Scan(&col, &declared)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("check source: no column %q in table %q: %w", s.column, name, ErrNoSource)
	case err != nil:
		return fmt.Errorf("check source: %w", err)
	}
	s.table, s.column = name, col
	s.qTable, s.qCol = quote(name), quote(col)
	if err := s.checkExact(ctx, q, declared); err != nil {
		return err
	}
	if allowUnindexed {
		return nil
	}
	return s.checkIndexed(ctx, q)
}

// querier is what resolveSource needs of a *sql.DB, *sql.Conn or *sql.Tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// affinity returns the type affinity SQLite gives a column declared with
// typ, by the rules of https://sqlite.org/datatype3.html section 3.1, in
// their order.
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

// checkExact refuses a key column whose comparison with a TEXT parameter
// is not byte equality: another affinity converts ids ('007' is stored as
// 7 under INTEGER or NUMERIC affinity, so "7" would be confirmed; a BLOB
// column never equals a TEXT parameter), and another collation equates
// different ids (NOCASE, RTRIM, or an application-defined one).
func (s *store) checkExact(ctx context.Context, q querier, declared string) error {
	if a := affinity(declared); a != "TEXT" {
		return fmt.Errorf("check source: column %s.%s is declared %q (%s affinity): SQLite would convert or mismatch ids, so answers could not be exact; declare it TEXT: %w",
			s.table, s.column, declared, a, ErrInexactColumn)
	}
	// The collation SQLite applies to `column = ?` is the column's own. A
	// subquery column keeps it, so compare probe values under it without
	// reading a row of the table. An application-defined collation is not
	// registered on the library's connections and fails here.
	var foldsCase, trims bool
	err := q.QueryRowContext(ctx, `SELECT x = 'A', x = 'a ' FROM (SELECT `+s.qCol+` AS x FROM `+s.qTable+` WHERE 0 UNION ALL SELECT 'a')`).Scan(&foldsCase, &trims)
	if err != nil {
		if strings.Contains(err.Error(), "collation") {
			return fmt.Errorf("check source: column %s.%s: %v: only BINARY compares ids exactly; declare it TEXT without COLLATE (or COLLATE BINARY): %w",
				s.table, s.column, err, ErrInexactColumn)
		}
		return fmt.Errorf("check source: %w", err)
	}
	if foldsCase || trims {
		why := "NOCASE, 'a' equals 'A'"
		if trims {
			why = "RTRIM, 'a' equals 'a '"
		}
		return fmt.Errorf("check source: column %s.%s has a collation that equates different ids (%s), so a never-fetched id could be confirmed as fetched; declare it TEXT without COLLATE (or COLLATE BINARY): %w",
			s.table, s.column, why, ErrInexactColumn)
	}
	return nil
}

// checkIndexed makes sure SQLite looks a key up through an index (the key
// column is the first column of an index with its own collation), not by
// scanning the table.
func (s *store) checkIndexed(ctx context.Context, q querier) error {
	plan, err := q.QueryContext(ctx, `EXPLAIN QUERY PLAN SELECT 1 FROM `+s.qTable+` WHERE `+s.qCol+` = ?`, "")
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
			return fmt.Errorf("check source: %s.%s: lookups would %s; create an index on (%s) or set AllowUnindexed: %w",
				s.table, s.column, strings.ToLower(detail), s.column, ErrNotIndexed)
		}
	}
	if err := plan.Err(); err != nil {
		return fmt.Errorf("check source: %w", err)
	}
	return nil
}

// sourceRow is a source's row in syncfilter_sources, if the source was
// attached.
type sourceRow struct {
	id        int64
	datasetID [16]byte
	scanned   bool
}

// findSource reads the source's row, matching names as SQLite does
// (case-insensitively); ok is false when the source was never attached or
// the library's tables do not exist.
func findSource(ctx context.Context, q querier, table, column string) (row sourceRow, ok bool, err error) {
	var exists bool
	if err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)`, sourcesTable).Scan(&exists); err != nil {
		return row, false, fmt.Errorf("find source: %w", err)
	}
	if !exists {
		return row, false, nil
	}
	var ds []byte
	err = q.QueryRowContext(ctx, `SELECT id, dataset_id, scanned FROM `+sourcesTable+`
		WHERE tbl = ? COLLATE NOCASE AND col = ? COLLATE NOCASE ORDER BY id LIMIT 1`, table, column).Scan(&row.id, &ds, &row.scanned)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return row, false, nil
	case err != nil:
		return row, false, fmt.Errorf("find source: %w", err)
	case len(ds) != len(row.datasetID):
		return row, false, fmt.Errorf("find source: dataset id of %d bytes in %s", len(ds), sourcesTable)
	}
	copy(row.datasetID[:], ds)
	return row, true, nil
}
