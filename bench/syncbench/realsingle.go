package syncbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"
)

// SingleOptions configure the single-id loop: one id per op, stored or
// new (even odds), asked of the library's Fetched and of a prepared
// SELECT 1 on the app's pool, the one that goes first alternating; then
// the wait (the record's fetch, or the app's other work) and, for a new
// id, the app's INSERT of it in its own transaction.
type SingleOptions struct {
	Driver string
	Rows   int64
	Ops    int
	Wait   WaitSpec
	Seed   uint64
}

// SingleResult holds the ops' times by kind of id.
type SingleResult struct {
	Opts        SingleOptions
	Lib, Select [2][]time.Duration // [Stored or New]: one per op
}

// RealSingle runs the single-id loop on a copy of the base table with
// its snapshot, in this process.
func RealSingle(ctx context.Context, o SingleOptions) (_ *SingleResult, err error) {
	d, dir, err := runDir(o.Driver, "single-", "single ids")
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	cfg, pool, err := realCopy(ctx, d, dir, o.Rows)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, pool.Close()) }()
	if err := pool.PrepareSelectOne(ctx); err != nil {
		return nil, err
	}
	lib, err := OpenLib(ctx, d, cfg.DB, cfg.Snapshot, pool.DB())
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, lib.Close(context.Background())) }()

	ref := NewReference(o.Rows)
	var inserted []string
	next := uint64(o.Rows)
	res := &SingleResult{Opts: o}
	for op := 0; op < o.Ops; op++ {
		rng := rand.New(rand.NewPCG(o.Seed, uint64(op)))
		kind, id := New, ""
		if pool := uint64(o.Rows) + uint64(len(inserted)); rng.IntN(2) == 0 && pool > 0 {
			kind = Stored
			if u := rng.Uint64N(pool); u < uint64(o.Rows) {
				id = RandomUUID.ID(u)
			} else {
				id = inserted[u-uint64(o.Rows)]
			}
		} else {
			id, next = RandomUUID.ID(next), next+1
		}
		want := ref.Has(id)
		if want != (kind == Stored) {
			return nil, fmt.Errorf("op %d: %q drawn as stored=%v, the reference says otherwise", op, id, kind == Stored)
		}
		sides := [2]func() error{
			func() error {
				got, took, err := lib.Fetched(ctx, id)
				res.Lib[kind] = append(res.Lib[kind], took)
				return judgeOne("the library's Fetched", id, got, want, err)
			},
			func() error {
				start := time.Now()
				got, err := pool.SelectOne(ctx, id)
				res.Select[kind] = append(res.Select[kind], time.Since(start))
				return judgeOne("SELECT 1", id, got, want, err)
			},
		}
		for k := range sides {
			if err := sides[(op+k)%2](); err != nil {
				return nil, fmt.Errorf("single ids: op %d: %w", op, err)
			}
		}
		if w := o.Wait.For(o.Seed, op); w > 0 {
			time.Sleep(w)
		}
		if kind == New {
			if _, err := pool.Store(ctx, []string{id}); err != nil {
				return nil, err
			}
			ref.Add(id)
			inserted = append(inserted, id)
		}
	}
	return res, nil
}

func judgeOne(side, id string, got, want bool, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", side, err)
	}
	if got != want {
		return fmt.Errorf("WRONG ANSWER from %s: %q answered fetched=%v, it is %v", side, id, got, want)
	}
	return nil
}

// WriteSingleTable writes the single-id results as a Markdown table:
// medians of the per-op ratios by kind of id.
func WriteSingleTable(w io.Writer, results []*SingleResult) error {
	var errs []error
	p := func(format string, args ...any) {
		_, err := fmt.Fprintf(w, format+"\n", args...)
		errs = append(errs, err)
	}
	p("| rows | wait between calls | id | ops | Fetched | SELECT 1 | Fetched ÷ SELECT 1 (median of ops) | p10 – p90 |")
	p("|---:|---|---|---:|---:|---:|---:|---:|")
	for _, res := range results {
		for kind, name := range []string{"stored", "new"} {
			lib, sel := res.Lib[kind], res.Select[kind]
			rs := make([]float64, len(lib))
			for i := range lib {
				rs[i] = Ratio(lib[i], sel[i])
			}
			p("| %s | %v | %s | %d | %s | %s | %.2f× | %.2f – %.2f |", thousands(fmt.Sprint(res.Opts.Rows)), res.Opts.Wait, name, len(lib),
				dur(Median(lib)), dur(Median(sel)), Quantile(rs, 0.5), Quantile(rs, 0.1), Quantile(rs, 0.9))
		}
	}
	return errors.Join(errs...)
}
