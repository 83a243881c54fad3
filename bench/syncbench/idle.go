package syncbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"
)

// IdleOptions configure the idle measure: a short sync (pages of ids
// asked, a wait, their new records stored), then the app idle with the
// library open for Idle.
type IdleOptions struct {
	Driver string
	Rows   int64
	Pages  int
	Idle   time.Duration
}

// IdleResult is the process's CPU time in each phase.
type IdleResult struct {
	Opts             IdleOptions
	SyncCPU, IdleCPU time.Duration // user + system
	SyncTook         time.Duration
	Goroutines       int // at the end of the idle time
	Baseline         int // before the library opened
}

// Idle runs the idle measure on a copy of the base table, in this
// process: nothing but the library runs during the idle time, so the CPU
// the process spends then is the library's (and the Go runtime's).
func Idle(ctx context.Context, o IdleOptions) (_ *IdleResult, err error) {
	d, dir, err := runDir(o.Driver, "idle-", "idle")
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	cfg, pool, err := realCopy(ctx, d, dir, o.Rows)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, pool.Close()) }()
	res := &IdleResult{Opts: o, Baseline: runtime.NumGoroutine()}
	lib, err := OpenLib(ctx, d, cfg.DB, cfg.Snapshot, pool.DB())
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, lib.Close(context.Background())) }()
	if err := lib.Wait(ctx); err != nil {
		return nil, err
	}
	next := uint64(o.Rows)
	cpu0, err := processCPU()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for p := 0; p < o.Pages; p++ {
		page := make([]string, 500)
		var fresh []string
		for i := range page {
			if i%2 == 0 {
				page[i] = RandomUUID.ID(uint64(i*p) % uint64(o.Rows))
			} else {
				page[i], next = RandomUUID.ID(next), next+1
				fresh = append(fresh, page[i])
			}
		}
		if _, _, err := lib.Missing(ctx, page); err != nil {
			return nil, err
		}
		time.Sleep(20 * time.Millisecond)
		if _, err := pool.Store(ctx, fresh); err != nil {
			return nil, err
		}
	}
	res.SyncTook = time.Since(start)
	cpu1, err := processCPU()
	if err != nil {
		return nil, err
	}
	select {
	case <-time.After(o.Idle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	cpu2, err := processCPU()
	if err != nil {
		return nil, err
	}
	res.SyncCPU, res.IdleCPU = cpu1-cpu0, cpu2-cpu1
	res.Goroutines = runtime.NumGoroutine()
	return res, nil
}

// WriteIdleTable prints the idle measure as Markdown.
func WriteIdleTable(w io.Writer, r *IdleResult) error {
	_, err := fmt.Fprintf(w, "| rows | sync (pages, took) | CPU during the sync | idle for | CPU while idle | goroutines (before the library, after the idle time) |\n|---:|---|---:|---|---:|---|\n| %d | %d pages, %v | %v | %v | %v | %d, %d |\n",
		r.Opts.Rows, r.Opts.Pages, r.SyncTook.Round(time.Millisecond), r.SyncCPU.Round(time.Millisecond), r.Opts.Idle, r.IdleCPU.Round(time.Microsecond), r.Baseline, r.Goroutines)
	return err
}
