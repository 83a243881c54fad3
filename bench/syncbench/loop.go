package syncbench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"time"
)

// Loop is one cell of the sync loop: a copy of a base table of Rows ids
// with a snapshot built by BuildLibSnapshot (as the cron job, or the
// app's previous run, leaves it), the library opened on it with the
// default Config, the two baselines on their own connections, and the
// app's connection that stores what each page fetched.
//
// Every page is asked of the three sides in turn, the side that goes first
// rotating page by page; then the app stores the page's new ids in one
// transaction, so the next page sees them, as a sync engine stores what it
// fetched.
type Loop struct {
	Shape  Shape
	Rows   int64
	Size   int // ids per page
	NewPct int // percent of a page's ids that are new
	Note   string

	Lib, InList, PerID, Insert []time.Duration // one per page
	LibObjects, LibBytes       uint64          // allocated by Missing, over every page

	// Single ids (Single): Fetched and the prepared SELECT per op, by
	// the id's kind and by whether the app committed since the last op.
	Singles [2][2]SidePair // [Stored or New][Quiet or AfterWrite]

	dir, path string
	ix        *LibIndex
	in        *InList
	per       *PerID
	app       *App
	allocs    *Allocs
	rng       *rand.Rand
	nextNew   uint64   // the next new id's index
	unstored  []string // new ids asked about, not yet stored (Single)
	wrote     bool     // the app committed since the last op (Single)
}

// SidePair holds the library's and the prepared SELECT's times for one
// kind of single-id call.
type SidePair struct{ Lib, Select []time.Duration }

// Indexes of Loop.Singles.
const (
	Stored, New       = 0, 1 // the id asked about is stored, or new
	Quiet, AfterWrite = 0, 1 // no commit since the last op, or the app committed just before
)

// OpenLoop prepares a cell: it copies the base table of shape and rows
// (built and cached by BaseDB), builds its snapshot and opens the three
// sides.
func OpenLoop(ctx context.Context, shape Shape, rows int64, size, newPct int) (_ *Loop, err error) {
	if size < 1 || newPct < 0 || newPct > 100 || rows < 1 {
		return nil, fmt.Errorf("open loop: page %d, new %d%%, rows %d: bad parameters", size, newPct, rows)
	}
	l := &Loop{Shape: shape, Rows: rows, Size: size, NewPct: newPct, allocs: NewAllocs(),
		rng: rand.New(rand.NewPCG(uint64(size), uint64(newPct))), nextNew: uint64(rows)}
	defer func() {
		if err != nil {
			err = errors.Join(err, l.Close())
		}
	}()
	if err := os.MkdirAll(CacheDir(), 0o755); err != nil {
		return nil, fmt.Errorf("open loop: %w", err)
	}
	if l.dir, err = os.MkdirTemp(CacheDir(), "loop-"); err != nil {
		return nil, fmt.Errorf("open loop: %w", err)
	}
	var snap string
	if l.path, snap, err = PrepareCopy(ctx, shape, rows, l.dir); err != nil {
		return nil, err
	}
	if l.ix, err = OpenLib(ctx, DefaultDriver(), l.path, snap, nil); err != nil {
		return nil, fmt.Errorf("open loop: %w", err)
	}
	// Untimed: the pages measure the serving filter, the snapshot's or,
	// if it was not used, the one the background rebuild made.
	if err := l.ix.Wait(ctx); err != nil {
		return nil, fmt.Errorf("open loop: %w", err)
	}
	if st := l.ix.Stats(); st.SnapshotError != "" || st.Rebuilds > 0 {
		l.Note = fmt.Sprintf("snapshot not served at open (%s); measured the rebuilt filter", st.SnapshotError)
	}
	if l.in, err = OpenInList(l.path); err != nil {
		return nil, err
	}
	if _, err := l.in.Prepare(ctx, size); err != nil {
		return nil, err
	}
	if l.per, err = OpenPerID(l.path); err != nil {
		return nil, err
	}
	if l.app, err = OpenApp(l.path); err != nil {
		return nil, err
	}
	return l, nil
}

// Paths returns the cell's database and snapshot files.
func (l *Loop) Paths() (db, snap string) { return l.path, l.path + ".sfb" }

// Index returns the library's index of the cell.
func (l *Loop) Index() *LibIndex { return l.ix }

// stored returns a stored id drawn at random.
func (l *Loop) stored() string { return l.Shape.ID(l.rng.Uint64N(uint64(l.Rows))) }

// fresh returns the next new id: one the server just created.
func (l *Loop) fresh() string {
	id := l.Shape.ID(l.nextNew)
	l.nextNew++
	return id
}

// makePage returns a page of Size ids, NewPct percent of them new (spread
// evenly), and the new ones in page order.
func (l *Loop) makePage() (page, fresh []string) {
	page = make([]string, l.Size)
	for i := range page {
		if (i*l.NewPct)/100 != ((i+1)*l.NewPct)/100 {
			page[i] = l.fresh()
			fresh = append(fresh, page[i])
		} else {
			page[i] = l.stored()
		}
	}
	return page, fresh
}

// Page runs page p: the three sides in turn, starting with side p mod 3,
// each checked against the page's new ids; then the app's INSERT.
func (l *Loop) Page(ctx context.Context, p int) error {
	page, want := l.makePage()
	sides := [3]func() error{
		func() error {
			o0, b0 := l.allocs.Read()
			ans, d, err := l.ix.Missing(ctx, page)
			o1, b1 := l.allocs.Read()
			l.LibObjects, l.LibBytes = l.LibObjects+o1-o0, l.LibBytes+b1-b0
			l.Lib = append(l.Lib, d)
			return check("library", missingIDs(page, ans), want, err)
		},
		func() error {
			start := time.Now()
			got, err := l.in.Missing(ctx, page)
			l.InList = append(l.InList, time.Since(start))
			return check("in-list", got, want, err)
		},
		func() error {
			start := time.Now()
			got, err := l.per.Missing(ctx, page)
			l.PerID = append(l.PerID, time.Since(start))
			return check("per-id select", got, want, err)
		},
	}
	for k := range sides {
		if err := sides[(p+k)%len(sides)](); err != nil {
			return fmt.Errorf("page %d: %w", p, err)
		}
	}
	d, err := l.app.Store(ctx, want)
	if err != nil {
		return err
	}
	l.Insert = append(l.Insert, d)
	l.wrote = len(want) > 0
	return nil
}

// check compares a side's missing ids with the page's new ones.
func check(side string, got, want []string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", side, err)
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s: %d ids missing, want the %d new ones", side, len(got), len(want))
	}
	return nil
}

// Single runs op p of the single-id loop: one id, stored or new at
// random (even odds), asked of Fetched and of the prepared SELECT, the
// side that goes first alternating; a new id is then fetched, and the app
// stores the new ids every storeEvery ops (1: each at once, in its own
// transaction), so about half the ops of store=1 follow a commit.
func (l *Loop) Single(ctx context.Context, p, storeEvery int) error {
	kind, id := Stored, ""
	if l.rng.Uint64()&1 == 1 {
		kind, id = New, l.fresh()
	} else {
		id = l.stored()
	}
	after := Quiet
	if l.wrote {
		after = AfterWrite
	}
	pair := &l.Singles[kind][after]
	calls := [2]func() error{
		func() error { return l.timeFetched(ctx, id, kind == Stored, &pair.Lib) },
		func() error { return l.timeSelect(ctx, id, kind == Stored, &pair.Select) },
	}
	for k := range calls {
		if err := calls[(p+k)%len(calls)](); err != nil {
			return fmt.Errorf("op %d: %w", p, err)
		}
	}
	l.wrote = false
	if kind == New {
		l.unstored = append(l.unstored, id)
	}
	if len(l.unstored) >= storeEvery {
		d, err := l.app.Store(ctx, l.unstored)
		if err != nil {
			return err
		}
		l.Insert = append(l.Insert, d)
		l.unstored, l.wrote = l.unstored[:0], true
	}
	return nil
}

// SingleMedians returns the medians of the library and of the SELECT for
// a kind of id, over both states (after = -1) or one.
func (l *Loop) SingleMedians(kind, after int) (lib, sel time.Duration) {
	var a, b []time.Duration
	for s := Quiet; s <= AfterWrite; s++ {
		if after == -1 || after == s {
			a = append(a, l.Singles[kind][s].Lib...)
			b = append(b, l.Singles[kind][s].Select...)
		}
	}
	return Median(a), Median(b)
}

func (l *Loop) timeFetched(ctx context.Context, id string, want bool, into *[]time.Duration) error {
	got, took, err := l.ix.Fetched(ctx, id)
	*into = append(*into, took)
	if err != nil || got != want {
		return fmt.Errorf("library: Fetched(%s) = %v, %v; want %v", id, got, err, want)
	}
	return nil
}

func (l *Loop) timeSelect(ctx context.Context, id string, want bool, into *[]time.Duration) error {
	start := time.Now()
	got, err := l.per.Fetched(ctx, id)
	*into = append(*into, time.Since(start))
	if err != nil || got != want {
		return fmt.Errorf("select: %s found %v, %v; want %v", id, got, err, want)
	}
	return nil
}

// Close closes every side and removes the cell's files.
func (l *Loop) Close() error {
	var errs []error
	if l.ix != nil {
		errs = append(errs, l.ix.Close(context.Background()))
	}
	if l.in != nil {
		errs = append(errs, l.in.Close())
	}
	if l.per != nil {
		errs = append(errs, l.per.Close())
	}
	if l.app != nil {
		errs = append(errs, l.app.Close())
	}
	if l.dir != "" {
		errs = append(errs, os.RemoveAll(l.dir))
	}
	return errors.Join(errs...)
}
