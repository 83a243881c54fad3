package syncbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// CollectionsOptions configure the many-collections start: one database
// holding N collections of Rows random UUIDs each, opened as the app
// opens it (OpenDB, one Index per collection, the first Missing of
// each), against opening one collection alone; the files stay in the
// page cache.
type CollectionsOptions struct {
	Driver string
	Rows   int64 // per collection
	N      int   // collections; default 10
	Reps   int   // of each (one and N), alternating; default 5
	Page   int   // ids of each first Missing (half stored); default 1,000
}

// CollectionsResult holds every rep's times.
type CollectionsResult struct {
	Opts        CollectionsOptions
	Setup       time.Duration
	Open, First [2][]time.Duration // [one, all N]: OpenDB and the Index calls; the first answers, summed
	// InList: [one, all N]: the app's own check instead, on a pool of
	// its own opened for the run: its first connection, and for each
	// collection one prepared IN-list of the page, summed.
	InList [2][]time.Duration
}

// RealCollections builds the database (the base table renamed coll0,
// copies of it coll1…, a snapshot each from BuildSnapshot) and opens it
// Reps times as one collection and as N, in turn.
func RealCollections(ctx context.Context, o CollectionsOptions) (_ *CollectionsResult, err error) {
	if o.N == 0 {
		o.N = 10
	}
	if o.Reps == 0 {
		o.Reps = 5
	}
	if o.Page == 0 {
		o.Page = 1000
	}
	d, dir, err := runDir(o.Driver, "collections-", "collections")
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	res := &CollectionsResult{Opts: o}
	start := time.Now()
	path := filepath.Join(dir, "app.db")
	if err := buildCollections(ctx, d, o, path); err != nil {
		return nil, err
	}
	res.Setup = time.Since(start)
	ref := NewReference(o.Rows)
	for r := 0; r < o.Reps; r++ {
		for k := range 2 {
			which := (r + k) % 2
			n := map[int]int{0: 1, 1: o.N}[which]
			page, _ := ColdPage(o.Rows, uint64(r), o.Page)
			open, first, err := openCollections(ctx, d, path, n, page, ref)
			if err != nil {
				return nil, err
			}
			in, err := inListCollections(ctx, d, path, n, page, ref)
			if err != nil {
				return nil, err
			}
			res.Open[which], res.First[which] = append(res.Open[which], open), append(res.First[which], first)
			res.InList[which] = append(res.InList[which], in)
		}
	}
	return res, nil
}

func collTable(i int) string { return fmt.Sprintf("coll%d", i) }

func collSnapshot(path string, i int) string {
	return filepath.Join(filepath.Dir(path), collTable(i)+".sfb")
}

// buildCollections writes the database of o.N collections at path.
func buildCollections(ctx context.Context, d Driver, o CollectionsOptions, path string) error {
	base, err := BaseDB(ctx, RandomUUID, o.Rows)
	if err != nil {
		return err
	}
	if err := CopyDB(base, path); err != nil {
		return err
	}
	db, err := openSQL(d, path, "_journal_mode=WAL")
	if err != nil {
		return err
	}
	for i := range o.N {
		q := fmt.Sprintf(`INSERT INTO %s SELECT id, body FROM coll0 ORDER BY id`, collTable(i))
		if i == 0 {
			q = `ALTER TABLE records RENAME TO coll0`
		} else if _, err := db.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE %s (id TEXT PRIMARY KEY, body TEXT)`, collTable(i))); err != nil {
			return errors.Join(fmt.Errorf("collections: %w", err), db.Close())
		}
		if _, err := db.ExecContext(ctx, q); err != nil {
			return errors.Join(fmt.Errorf("collections: %w", err), db.Close())
		}
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("collections: %w", err)
	}
	for i := range o.N {
		if err := BuildLibSnapshot(ctx, d, path, collTable(i), collSnapshot(path, i)); err != nil {
			return err
		}
	}
	return nil
}

// openCollections opens the database and n collections, asks each its
// first page, judges it and closes everything (untimed).
func openCollections(ctx context.Context, d Driver, path string, n int, page []string, ref *Reference) (open, first time.Duration, err error) {
	want := ref.Truth(page)
	start := time.Now()
	db, err := OpenLibDB(ctx, d, path, nil)
	if err != nil {
		return 0, 0, err
	}
	defer func() { err = errors.Join(err, db.Close(context.Background())) }()
	ixs := make([]*LibIndex, n)
	for i := range ixs {
		if ixs[i], err = db.Index(ctx, collTable(i), collSnapshot(path, i)); err != nil {
			return 0, 0, err
		}
	}
	open = time.Since(start)
	for i, ix := range ixs {
		got, took, err := ix.Missing(ctx, page)
		if err != nil {
			return 0, 0, err
		}
		first += took
		if err := Judge("the library on "+collTable(i), page, got, want); err != nil {
			return 0, 0, err
		}
	}
	return open, first, nil
}

// WriteCollectionsTable writes the many-collections results as a
// Markdown table: medians of the reps.
// inListCollections is the app's own check of the first page of n
// collections: a pool opened for it, and per collection one IN-list
// prepared and run (the ids in NFC; the tables hold UUIDs only).
func inListCollections(ctx context.Context, d Driver, path string, n int, page []string, ref *Reference) (took time.Duration, err error) {
	want := ref.Truth(page)
	start := time.Now()
	db, err := openSQL(d, path, AppDSNOptions)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	args := make([]any, len(page))
	for i, id := range page {
		args[i] = id
	}
	for i := range n {
		st, err := db.PrepareContext(ctx, `SELECT id FROM `+collTable(i)+` WHERE id IN (?`+strings.Repeat(`, ?`, len(page)-1)+`)`)
		if err != nil {
			return 0, fmt.Errorf("collections: %w", err)
		}
		rows, err := st.QueryContext(ctx, args...)
		if err != nil {
			return 0, errors.Join(fmt.Errorf("collections: %w", err), st.Close())
		}
		found := map[string]bool{}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return 0, errors.Join(fmt.Errorf("collections: %w", err), rows.Close(), st.Close())
			}
			found[id] = true
		}
		if err := errors.Join(rows.Close(), st.Close()); err != nil {
			return 0, fmt.Errorf("collections: %w", err)
		}
		got := make([]bool, len(page))
		for j, id := range page {
			got[j] = !found[id]
		}
		if err := Judge("the IN-list on "+collTable(i), page, got, want); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

func WriteCollectionsTable(w io.Writer, results []*CollectionsResult) error {
	var errs []error
	p := func(format string, args ...any) {
		_, err := fmt.Fprintf(w, format+"\n", args...)
		errs = append(errs, err)
	}
	p("| collections | rows each | OpenDB + Index calls | first answers (all) | total | ÷ one collection | the app's IN-lists instead | total ÷ IN-lists | reps |")
	p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, res := range results {
		total := func(which int) time.Duration {
			ts := make([]time.Duration, len(res.Open[which]))
			for i := range ts {
				ts[i] = res.Open[which][i] + res.First[which][i]
			}
			return Median(ts)
		}
		one := total(0)
		for which, n := range []int{1, res.Opts.N} {
			t := total(which)
			in := Median(res.InList[which])
			p("| %d | %s | %s | %s | %s | %.2f× | %s | %.2f× | %d |", n, thousands(fmt.Sprint(res.Opts.Rows)), dur(Median(res.Open[which])),
				dur(Median(res.First[which])), dur(t), Ratio(t, one), dur(in), Ratio(t, in), len(res.Open[which]))
		}
	}
	return errors.Join(errs...)
}
