package syncbench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// The baselines are what a careful engineer writes without the library:
// ids NFC-normalized first (golang.org/x/text/unicode/norm), statements
// prepared once and reused, each on its own connection.

// openReader opens one connection for a baseline.
func openReader(path string) (*sql.DB, error) {
	d := DefaultDriver()
	db, err := sql.Open(d.SQLName, d.DSN(path, "_busy_timeout=10000"))
	if err != nil {
		return nil, fmt.Errorf("open baseline connection: %w", err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// InList answers a page with one prepared
// `SELECT id FROM records WHERE id IN (?, ?, …)`, one statement per page
// size.
type InList struct {
	db    *sql.DB
	stmts map[int]*sql.Stmt
}

// OpenInList opens the IN-list baseline on the database at path.
func OpenInList(path string) (*InList, error) {
	db, err := openReader(path)
	if err != nil {
		return nil, err
	}
	return &InList{db: db, stmts: map[int]*sql.Stmt{}}, nil
}

// Prepare prepares the statement for pages of n ids (Missing prepares it
// on first use otherwise).
func (l *InList) Prepare(ctx context.Context, n int) (*sql.Stmt, error) {
	return prepareInList(ctx, l.db, l.stmts, n)
}

// prepareInList returns the IN-list of n parameters from stmts, preparing
// it on db and keeping it there at first use.
func prepareInList(ctx context.Context, db *sql.DB, stmts map[int]*sql.Stmt, n int) (*sql.Stmt, error) {
	if st, ok := stmts[n]; ok {
		return st, nil
	}
	q := `SELECT id FROM records WHERE id IN (?` + strings.Repeat(`, ?`, n-1) + `)`
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("prepare in-list of %d: %w", n, err)
	}
	stmts[n] = st
	return st, nil
}

// Missing returns the ids of page not in the table, in page order.
func (l *InList) Missing(ctx context.Context, page []string) ([]string, error) {
	if len(page) == 0 {
		return nil, nil
	}
	st, err := l.Prepare(ctx, len(page))
	if err != nil {
		return nil, err
	}
	canon := make([]string, len(page))
	args := make([]any, len(page))
	for i, id := range page {
		canon[i] = norm.NFC.String(id)
		args[i] = canon[i]
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("in-list: %w", err)
	}
	found := make(map[string]struct{}, len(page))
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("in-list: %w", err)
		}
		found[id] = struct{}{}
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("in-list: %w", err)
	}
	var missing []string
	for i, id := range page {
		if _, ok := found[canon[i]]; !ok {
			missing = append(missing, id)
		}
	}
	return missing, nil
}

// Close closes the statements and the connection.
func (l *InList) Close() error {
	var errs []error
	for _, st := range l.stmts {
		errs = append(errs, st.Close())
	}
	return errors.Join(append(errs, l.db.Close())...)
}

// PerID answers one id with a prepared `SELECT 1 FROM records WHERE id = ?`.
type PerID struct {
	db   *sql.DB
	stmt *sql.Stmt
}

// OpenPerID opens the per-id baseline on the database at path.
func OpenPerID(path string) (*PerID, error) {
	db, err := openReader(path)
	if err != nil {
		return nil, err
	}
	st, err := db.Prepare(`SELECT 1 FROM records WHERE id = ?`)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("prepare select: %w", err)
	}
	return &PerID{db: db, stmt: st}, nil
}

// Fetched reports whether id is in the table.
func (p *PerID) Fetched(ctx context.Context, id string) (bool, error) {
	var one int
	switch err := p.stmt.QueryRowContext(ctx, norm.NFC.String(id)).Scan(&one); {
	case err == nil:
		return true, nil
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	default:
		return false, fmt.Errorf("select id: %w", err)
	}
}

// Missing returns the ids of page not in the table, one SELECT each.
func (p *PerID) Missing(ctx context.Context, page []string) ([]string, error) {
	var missing []string
	for _, id := range page {
		ok, err := p.Fetched(ctx, id)
		if err != nil {
			return nil, err
		}
		if !ok {
			missing = append(missing, id)
		}
	}
	return missing, nil
}

// Close closes the statement and the connection.
func (p *PerID) Close() error {
	return errors.Join(p.stmt.Close(), p.db.Close())
}
