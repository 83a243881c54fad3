package rebuild

import (
	"context"
	"fmt"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// DetachOptions are Detach's settings beyond the source's names.
type DetachOptions struct {
	// Force detaches even while a rebuild's scan holds the source (see
	// ErrHeld).
	Force bool
}

// Detach removes everything the library added to the database for one
// source, in one transaction: its two triggers, its log and spellings tables,
// its row in syncfilter_sources and its records of snapshots and scans;
// with the last source gone, the shared tables (syncfilter_sources,
// syncfilter_snapshots, syncfilter_scans) too. For the library's own
// table (table and column empty), syncfilter_fetched and the fetched keys
// it holds go as well. Afterwards the schema (sqlite_master) is what it
// was before the source was first attached. Names match as SQLite's do,
// case-insensitively. A source that is not attached gives ErrNotAttached
// and changes nothing. db says which database and how to open it (Path,
// Driver or DB, BusyTimeout).
//
// While a rebuild scans the source (in any process), Detach refuses with
// ErrHeld; a process killed during its scan leaves the scan's lease until
// it expires (ten minutes after its last renewal): check that the
// process is gone, and force (DetachWith, Force). An app that has the
// source open when it is detached notices at its next call and answers
// from SQLite (exactly, without the filter) until it opens the source
// again, which attaches it again: stop the app first to remove the
// library for good. A snapshot file is not removed (delete it yourself;
// a later attach gets a new dataset id and does not replace a file of
// another dataset without ReplaceForeignFile).
func Detach(ctx context.Context, db DBConfig, table, column string) error {
	return DetachWith(ctx, db, table, column, DetachOptions{})
}

// DetachWith is Detach with options.
func DetachWith(ctx context.Context, db DBConfig, table, column string, opts DetachOptions) error {
	if (table == "") != (column == "") {
		return fmt.Errorf("detach: table %q and column %q: give both or neither: %w", table, column, ErrBadConfig)
	}
	if table != "" {
		if err := store.CheckName("table", table); err != nil {
			return fmt.Errorf("detach: %w", err)
		}
		if err := store.CheckName("column", column); err != nil {
			return fmt.Errorf("detach: %w", err)
		}
	}
	db, err := db.withDefaults()
	if err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	d, err := db.driver()
	if err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	drv, err := store.NewDriver(d)
	if err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	return store.Detach(ctx, db.Path, table, column, drv, db.BusyTimeout, opts.Force)
}
