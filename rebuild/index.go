package rebuild

import (
	"context"
	"errors"
	"fmt"

	"github.com/syncfilter/syncfilter/rebuild/internal/gate"
	"github.com/syncfilter/syncfilter/rebuild/internal/upkeep"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// Index answers, for one collection of a database, "was this record
// fetched?": from its filter when the filter covers the source, from
// SQLite otherwise, and never "fetched" on the filter's word alone. All
// its methods are safe for concurrent use.
//
// Rules the code keeps:
//   - A call pays only for its answer: loading the snapshot, catching up
//     between calls, re-attaching after a migration and rebuilding run in
//     the background, and SQLite answers exactly meanwhile.
//   - No lock a call, a callback or Close can wait for is held across SQL
//     or a callback (docs/ARCHITECTURE.md, "Locks and goroutines").
//   - No read (Fetched, Missing, catch-up) writes; writes happen in Open,
//     the background's jobs, Save and Close.
//   - Every filter is closed exactly once, by whoever retired it.
//   - Close's ctx bounds its wait; what remains finishes without the caller.
type Index struct {
	db    *DB
	k     *upkeep.Keeper
	owned bool // Close closes db too: Open opened it for this index
}

// Open opens the database and the index of one collection; Close closes
// both.
func Open(ctx context.Context, dcfg DBConfig, src Source) (*Index, error) {
	db, err := openDB(ctx, dcfg, src.Table == "")
	if err != nil {
		return nil, err
	}
	first := db.bg.Files.Current().St
	ix, err := db.index(ctx, src, true)
	if err != nil {
		if db.Close(context.WithoutCancel(ctx)) == nil {
			first.RemoveCreated() // a failed Open leaves no database it created
		}
		return nil, err
	}
	return ix, nil
}

// Index opens the index of one collection: it checks the source before
// the first write and returns; the filter is made ready in the
// background, SQLite answering every call exactly meanwhile.
func (db *DB) Index(ctx context.Context, src Source) (*Index, error) {
	return db.index(ctx, src, false)
}

func (db *DB) index(ctx context.Context, src Source, owned bool) (*Index, error) {
	src, err := src.withDefaults(db.cfg.ReadOnly)
	if err != nil {
		return nil, err
	}
	k, err := db.bg.NewKeeper(src.upkeep(), src.gate(db.cfg.ReadOnly, db.cfg.knobs))
	if err != nil {
		return nil, err
	}
	ix := &Index{db: db, k: k, owned: owned}
	opened := false
	defer func() { // also when a Progress callback panicked: let go, then panic on
		if !opened {
			_ = k.Close(context.WithoutCancel(ctx))
		}
	}()
	if err := k.Open(ctx); err != nil {
		return nil, err
	}
	opened = true
	return ix, nil
}

// call runs fn as one of the app's calls on the index.
func (ix *Index) call(ctx context.Context, verb string, fn func(c *gate.Call) error) error {
	t, ok := ix.k.Life().Enter()
	if !ok {
		return ErrClosed
	}
	defer ix.k.Life().Leave(t)
	c, err := ix.k.G.LookForApp(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", verb, ended(ctx, err))
	}
	err = fn(c)
	c.End()
	if err != nil {
		return fmt.Errorf("%s: %w", verb, ended(ctx, c.F.Explain(err)))
	}
	ix.k.Called()
	return nil
}

// Missing reports for each id of a page whether the source holds no equal
// id (fetch it): none canonically equivalent, or none with the same bytes
// under syncfilter.CompareBytes (Source.Compare). A key that cannot be
// compared is answered missing and named in an *InvalidKeysError.
func (ix *Index) Missing(ctx context.Context, keys []string) ([]bool, error) {
	p := newPage(ix.k.G, keys)
	var found []bool
	if err := ix.call(ctx, "missing", func(c *gate.Call) (err error) {
		found, err = c.Answer(ctx, p.asked())
		return err
	}); err != nil {
		return nil, err
	}
	ix.k.G.C.Queries.Add(uint64(len(keys)))
	if p.bad != nil {
		ix.k.G.C.Invalid.Add(uint64(len(p.bad.Keys)))
		return p.missing(found), fmt.Errorf("missing: %w", p.bad)
	}
	return p.missing(found), nil
}

// Fetched reports whether the record with this id was fetched: whether
// the source holds an equal id (in the source's Compare).
func (ix *Index) Fetched(ctx context.Context, key string) (bool, error) {
	canon, err := ix.k.G.Canonical(key)
	if err != nil {
		ix.k.G.C.Queries.Add(1)
		ix.k.G.C.Invalid.Add(1)
		return false, fmt.Errorf("fetched: %w", &InvalidKeysError{Keys: []*syncfilter.KeyError{{Index: 0, Err: err}}})
	}
	var found bool
	if err := ix.call(ctx, "fetched", func(c *gate.Call) (err error) {
		found, err = c.AnswerOne(ctx, canon)
		return err
	}); err != nil {
		return false, err
	}
	ix.k.G.C.Queries.Add(1)
	return found, nil
}

// MarkFetched records keys as fetched in the library's own table (Source
// with no Table), in the form the source compares (NFC, or as given under
// CompareBytes), in one transaction.
func (ix *Index) MarkFetched(ctx context.Context, keys ...string) error {
	table, _ := ix.k.G.Names()
	switch {
	case table != "":
		return fmt.Errorf("mark fetched in %s: the app stores its records itself (the library's own table only): %w", table, ErrBadConfig)
	case ix.db.cfg.ReadOnly:
		return fmt.Errorf("mark fetched: the database is opened read-only: %w", ErrBadConfig)
	}
	canon := make([]string, len(keys))
	for i, k := range keys {
		c, err := ix.k.G.Canonical(k)
		if err != nil {
			return fmt.Errorf("mark fetched: %w", &syncfilter.KeyError{Index: i, Err: err})
		}
		canon[i] = c
	}
	return ix.call(ctx, "mark fetched", func(c *gate.Call) error { return c.F.St.InsertOwn(ctx, c.Src(), canon) })
}

// Wait blocks until the background work asked for the index is done and
// the filter has taken in everything logged up to now, or returns why no
// filter serves (ErrNotServing). Calls are exact without it.
func (ix *Index) Wait(ctx context.Context) error { return ix.k.Wait(ctx) }

// Rebuild replaces the filter with one built from a full scan, SQLite
// answering meanwhile; if the scan fails the previous filter answers
// again. A Progress callback's panic goes on in the caller.
func (ix *Index) Rebuild(ctx context.Context) error {
	if ix.db.cfg.ReadOnly {
		return fmt.Errorf("rebuild: the database is opened read-only: %w", ErrBadConfig)
	}
	return ix.k.Rebuild(ctx)
}

// Save writes the serving filter to the snapshot file, atomically.
func (ix *Index) Save(ctx context.Context) error {
	t, ok := ix.k.Life().Enter()
	if !ok {
		return ErrClosed
	}
	defer ix.k.Life().Leave(t)
	return ix.k.Save(ctx)
}

// Close stops the index's background work, waits for it and the calls in
// progress (until ctx ends), saves the filter if it covers more than the
// snapshot file (returning the save's error); Open's index closes its DB.
func (ix *Index) Close(ctx context.Context) error {
	if ix.owned {
		return ix.db.Close(ctx)
	}
	return ix.k.Close(ctx)
}

// ended returns err, wrapping ctx's cause too when ctx ended: a statement
// interrupted by ctx fails with whatever the driver reports.
func ended(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		return fmt.Errorf("%w (%w)", cause, err)
	}
	return err
}
