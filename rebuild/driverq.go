package rebuild

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
)

// The scan reads through the driver directly, on a connection held for
// it, below database/sql's per-row cost. These helpers run its statements.

// driverQuery runs q with args. No cancellation hook per row: the
// statement runs under a context that never ends, and callers check ctx
// between rows. done closes the rows and the statement.
func driverQuery(ctx context.Context, prep driver.ConnPrepareContext, q string, args ...driver.NamedValue) (rows driver.Rows, done func(), err error) {
	st, err := prep.PrepareContext(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	rows, err = st.(driver.StmtQueryContext).QueryContext(context.Background(), args)
	if err != nil {
		_ = st.Close()
		return nil, nil, err
	}
	return rows, func() { _ = rows.Close(); _ = st.Close() }, nil
}

// driverFirst returns the first row of q.
func driverFirst(ctx context.Context, prep driver.ConnPrepareContext, q string, cols int, args ...driver.NamedValue) ([]driver.Value, error) {
	rows, done, err := driverQuery(ctx, prep, q, args...)
	if err != nil {
		return nil, err
	}
	defer done()
	row := make([]driver.Value, cols)
	return row, rows.Next(row)
}

// eachRow hands the first value of every row to fn, checking ctx every
// 4,096 rows.
func eachRow(ctx context.Context, rows driver.Rows, fn func(driver.Value) error) error {
	dest := make([]driver.Value, 1)
	for n := 0; ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return context.Cause(ctx)
			}
		}
		if err := rows.Next(dest); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if err := fn(dest[0]); err != nil {
			return err
		}
	}
}

// readKeys hands the rows of q to row, as text: a number in a TEXT column
// cannot be (affinity made it text), but would be read as its text.
func readKeys(ctx context.Context, prep driver.ConnPrepareContext, q string, row func(string) error, args ...driver.NamedValue) error {
	rows, done, err := driverQuery(ctx, prep, q, args...)
	if err != nil {
		return err
	}
	defer done()
	return eachRow(ctx, rows, func(v driver.Value) error {
		k, ok := v.(string)
		if !ok {
			k = fmt.Sprint(v)
		}
		return row(k)
	})
}
