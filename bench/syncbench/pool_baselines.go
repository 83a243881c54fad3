package syncbench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"golang.org/x/text/unicode/norm"
)

// The baselines on the app's own pool are what a user writes without
// the library: ids NFC-normalized (golang.org/x/text), statements
// prepared once and reused. SQLite compares bytes, so a row stored in
// NFD is not found under its NFC spelling: Reference.InListTruth says
// what the IN-list can know.

// PrepareInList prepares, once, the IN-list of n parameters:
// `SELECT id FROM records WHERE id IN (?, ?, …)`.
func (a *AppPool) PrepareInList(ctx context.Context, n int) (*sql.Stmt, error) {
	return prepareInList(ctx, a.db, a.in, n)
}

// InList answers a page with one prepared IN-list of the ids' NFC
// spellings: notFetched has one answer per position.
func (a *AppPool) InList(ctx context.Context, page []string) (notFetched []bool, err error) {
	if len(page) == 0 {
		return nil, nil
	}
	canon := make([]string, len(page))
	args := make([]any, len(page))
	for i, id := range page {
		canon[i] = norm.NFC.String(id)
		args[i] = canon[i]
	}
	st, err := a.PrepareInList(ctx, len(args))
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("in-list: %w", err)
	}
	found := make(map[string]struct{}, len(page))
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, errors.Join(fmt.Errorf("in-list: %w", err), rows.Close())
		}
		found[id] = struct{}{}
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("in-list: %w", err)
	}
	notFetched = make([]bool, len(page))
	for i := range page {
		_, ok := found[canon[i]]
		notFetched[i] = !ok
	}
	return notFetched, nil
}

// PrepareSelectOne prepares, once, `SELECT 1 FROM records WHERE id = ?`.
func (a *AppPool) PrepareSelectOne(ctx context.Context) error {
	if a.one != nil {
		return nil
	}
	st, err := a.db.PrepareContext(ctx, `SELECT 1 FROM records WHERE id = ?`)
	if err != nil {
		return fmt.Errorf("prepare select: %w", err)
	}
	a.one = st
	return nil
}

// SelectOne reports whether the record id (an ASCII id: its NFC spelling
// is the only one) is stored, with the prepared SELECT 1.
func (a *AppPool) SelectOne(ctx context.Context, id string) (bool, error) {
	if err := a.PrepareSelectOne(ctx); err != nil {
		return false, err
	}
	var one int
	switch err := a.one.QueryRowContext(ctx, norm.NFC.String(id)).Scan(&one); {
	case err == nil:
		return true, nil
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	default:
		return false, fmt.Errorf("select id: %w", err)
	}
}
