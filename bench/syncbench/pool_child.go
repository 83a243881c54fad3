package syncbench

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// poolChild is a cold-start child of the app's pool shape (ModeLibPool,
// ModeSQLPool): the app opens its pool as it always does at start, then
// the library answers its first page (through lib.go), or the IN-list on
// the pool does. Open is the pool and the library, or the pool and the
// IN-list's Prepare; First is the answer; both are judged by the page's
// own truth (the odd positions are new: ColdPage).
func poolChild(ctx context.Context, r *ChildReport, t0 time.Time, driver, db, snap string, page []string) (err error) {
	d, err := DriverNamed(driver)
	if err != nil {
		return err
	}
	if r.Mode == ModeLibPool {
		if err := CheckLibDriver(d); err != nil {
			return err
		}
	}
	want := make([]bool, len(page))
	for i := range want {
		want[i] = i%2 == 1
	}
	start := time.Now()
	pool, err := OpenAppPool(ctx, d, db)
	if err != nil {
		return fmt.Errorf("cold child: %w", err)
	}
	defer func() { err = errors.Join(err, pool.Close()) }()
	var got []bool
	if r.Mode == ModeLibPool {
		lib, err := OpenLib(ctx, d, db, snap, pool.DB())
		if err != nil {
			return fmt.Errorf("cold child: %w", err)
		}
		defer func() { err = errors.Join(err, lib.Close(context.Background())) }()
		r.Open = time.Since(start)
		call := time.Now()
		if got, r.First, err = lib.Missing(ctx, page); err != nil {
			return fmt.Errorf("cold child: %w", err)
		}
		r.Total = call.Add(r.First).Sub(t0) // to the answer, not to its conversion (lib.go)
		st := lib.Stats()
		r.Serving, r.SnapshotError = st.Bypass == 0, st.SnapshotError
	} else {
		if _, err := pool.PrepareInList(ctx, len(page)); err != nil {
			return fmt.Errorf("cold child: %w", err)
		}
		r.Open = time.Since(start)
		start = time.Now()
		if got, err = pool.InList(ctx, page); err != nil {
			return fmt.Errorf("cold child: %w", err)
		}
		r.First, r.Total = time.Since(start), time.Since(t0)
	}
	for _, nf := range got {
		if nf {
			r.Missing++
		}
	}
	return Judge(r.Mode, page, got, want)
}
