package syncbench

// lib.go is the one file of the harness that calls the library (with
// events.go, which takes its log): when its API changes, only these
// change. It times the library's own call alone.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"time"

	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/rebuild/ops"
)

// libDriver returns the app's driver d as the library takes it: the
// library opens its connections through it, so that the process holds
// one copy of SQLite.
func libDriver(d Driver) (driver.Driver, error) { return d.SQLDriver() }

// CheckLibDriver reports whether the library can run with the app's
// driver d, before anything is prepared.
func CheckLibDriver(d Driver) error {
	_, err := libDriver(d)
	return err
}

// libFPR is the target false-positive rate of the harness's indexes:
// the Source's default.
const libFPR = 0.01

// libSource is the default Source of the collection in table.
func libSource(table, snapshot string) rebuild.Source {
	return rebuild.Source{Table: table, Column: Column, Snapshot: snapshot}
}

// LibIndex is the library's index of one collection.
type LibIndex struct {
	ix    *rebuild.Index
	ev    *libEvents // its database's events
	table string     // whose events are its own; "": all of them (a database of its own)
}

// OpenLib opens the library on the app's table (Table, Column) of the
// database at path, as an app does at start: one collection, the
// snapshot file given (it need not exist yet).
//
// app, if not nil, is the app's own pool (AppPool.DB): the library takes
// its driver from it and confirms on it (rebuild.DBConfig.DB).
func OpenLib(ctx context.Context, d Driver, path, snapshot string, app *sql.DB) (*LibIndex, error) {
	return openLib(ctx, d, path, app, libSource(Table, snapshot))
}

// openLibSized is OpenLib with no app pool and filters sized for at
// least capacity keys (rebuild.Source.Capacity; 0: the default).
func openLibSized(ctx context.Context, d Driver, path, snapshot string, capacity uint64) (*LibIndex, error) {
	src := libSource(Table, snapshot)
	src.Capacity = capacity
	return openLib(ctx, d, path, nil, src)
}

func openLib(ctx context.Context, d Driver, path string, app *sql.DB, src rebuild.Source) (*LibIndex, error) {
	drv, err := libDriver(d)
	if err != nil {
		return nil, err
	}
	ev := newLibEvents()
	ix, err := rebuild.Open(ctx, rebuild.DBConfig{Path: path, Driver: drv, DB: app, Logger: ev.logger(), ConnParams: d.Params}, src)
	if err != nil {
		return nil, fmt.Errorf("open library: %w", err)
	}
	return &LibIndex{ix: ix, ev: ev}, nil
}

// Missing asks the library about a page: notFetched has one answer per
// position (true: not fetched). took is the library's call alone.
func (l *LibIndex) Missing(ctx context.Context, page []string) (notFetched []bool, took time.Duration, err error) {
	start := time.Now()
	notFetched, err = l.ix.Missing(ctx, page)
	took = time.Since(start)
	if err == nil && len(notFetched) != len(page) {
		err = fmt.Errorf("library: Missing answered %d positions of %d", len(notFetched), len(page))
	}
	return notFetched, took, err
}

// MissingCounted is Missing that also returns the process's allocations
// during the call (runtime.MemStats.Mallocs before and after, read
// outside the timed call; the library's goroutines count too).
func (l *LibIndex) MissingCounted(ctx context.Context, page []string) (notFetched []bool, took time.Duration, mallocs uint64, err error) {
	m0 := Mallocs()
	notFetched, took, err = l.Missing(ctx, page)
	return notFetched, took, Mallocs() - m0, err
}

// Fetched asks the library about one id; took is the call alone.
func (l *LibIndex) Fetched(ctx context.Context, id string) (fetched bool, took time.Duration, err error) {
	start := time.Now()
	fetched, err = l.ix.Fetched(ctx, id)
	return fetched, time.Since(start), err
}

// Wait waits until the index is past its opening load or rebuild and
// any rebuild it asked for; its error says why no filter serves.
func (l *LibIndex) Wait(ctx context.Context) error { return l.ix.Wait(ctx) }

// Close closes the index (and the database, for OpenLib's).
func (l *LibIndex) Close(ctx context.Context) error { return l.ix.Close(ctx) }

// LibStats are the library's counters the harness reports: the index's
// Stats and, where marked, its database's events (events.go).
type LibStats struct {
	Serving        bool
	Rebuilding     bool   // a rebuild is asked for or running
	Bypass         uint64 // keys answered from SQLite alone, no filter serving
	FalsePositives uint64 // maybes SQLite refuted
	Dropped        uint64
	Rebuilds       uint64
	Generation     uint64 // the log generation the filter covers
	Items          uint64
	Capacity       uint64
	EstimatedFPR   float64
	TargetFPR      float64
	AutoRebuilds   uint64        // events: rebuilds asked for because the filter was due
	LastRebuildIn  time.Duration // events: the last rebuild, its start to its filter serving
	SnapshotError  string        // events: why the snapshot was not used or may not be saved
	LastError      string        // events: the last failed rebuild's error
}

// Stats returns the library's counters.
func (l *LibIndex) Stats() LibStats {
	st, ev := l.ix.Stats(), l.ev.counts(l.table)
	return LibStats{Serving: st.Serving, Rebuilding: strings.Contains(st.Upkeep, "rebuild"),
		Bypass: st.BypassLookups, FalsePositives: st.FalsePositives, Dropped: st.Dropped, Rebuilds: st.Rebuilds,
		Generation: st.Generation, Items: st.Items, Capacity: st.Capacity, EstimatedFPR: st.EstimatedFPR, TargetFPR: libFPR,
		AutoRebuilds: ev.Due, LastRebuildIn: ev.LastRebuildIn, SnapshotError: ev.snapshotError(), LastError: ev.LastError}
}

// BuildLibSnapshot writes the snapshot of the collection in table, as
// the cron job (or the app's last run) leaves it.
func BuildLibSnapshot(ctx context.Context, d Driver, path, table, snapshot string) error {
	drv, err := libDriver(d)
	if err != nil {
		return err
	}
	if _, err := ops.BuildSnapshot(ctx, rebuild.DBConfig{Path: path, Driver: drv, ConnParams: d.Params}, libSource(table, snapshot)); err != nil {
		return fmt.Errorf("build snapshot of %s: %w", table, err)
	}
	return nil
}

// LibDB is one database opened for several collections.
type LibDB struct {
	db *rebuild.DB
	ev *libEvents
}

// OpenLibDB opens the database at path for several collections.
func OpenLibDB(ctx context.Context, d Driver, path string, app *sql.DB) (*LibDB, error) {
	drv, err := libDriver(d)
	if err != nil {
		return nil, err
	}
	ev := newLibEvents()
	db, err := rebuild.OpenDB(ctx, rebuild.DBConfig{Path: path, Driver: drv, DB: app, Logger: ev.logger(), ConnParams: d.Params})
	if err != nil {
		return nil, fmt.Errorf("open library database: %w", err)
	}
	return &LibDB{db: db, ev: ev}, nil
}

// Index opens the index of the collection in table (key column Column).
func (db *LibDB) Index(ctx context.Context, table, snapshot string) (*LibIndex, error) {
	ix, err := db.db.Index(ctx, libSource(table, snapshot))
	if err != nil {
		return nil, fmt.Errorf("open collection %s: %w", table, err)
	}
	return &LibIndex{ix: ix, ev: db.ev, table: table}, nil
}

// Close closes the database and its indexes.
func (db *LibDB) Close(ctx context.Context) error { return db.db.Close(ctx) }

// missingIDs lists the ids of page answered missing (Missing's answers,
// one per position), each id once, in page order: what the older
// harnesses compare with the page's new ids.
func missingIDs(page []string, missing []bool) []string {
	var out []string
	seen := map[string]bool{}
	for i, m := range missing {
		if m && !seen[page[i]] {
			seen[page[i]] = true
			out = append(out, page[i])
		}
	}
	return out
}
