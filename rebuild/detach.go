package rebuild

import (
	"context"
	"fmt"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// DetachOptions are Detach's settings beyond the source's names.
type DetachOptions struct {
	// BusyTimeout is how long SQLite waits for a lock. Default 5s.
	BusyTimeout time.Duration
	// Force detaches even while an open index or a rebuild's scan holds
	// the source (they then serve from SQLite, see ErrHeld).
	Force bool
}

// Detach removes everything the library added to the database for one
// source, in one transaction: its two triggers, its log and alias tables,
// its row in syncfilter_sources and its records of snapshots, scans and
// holds; with the last source gone, the shared tables (syncfilter_sources,
// syncfilter_snapshots, syncfilter_scans, syncfilter_holders) too. For the
// library's own table (table and column empty), syncfilter_fetched and the
// fetched keys it holds go as well. Afterwards the schema (sqlite_master)
// is what it was before the source was first attached. Names match as
// SQLite's do, case-insensitively. A source that is not attached gives
// ErrNotAttached and changes nothing.
//
// While an index is open on the source (in any process; a writable index
// records a hold, renewed while it is open) or a rebuild scans it, Detach
// refuses with ErrHeld, naming them; close them first, or use
// DetachWith and Force. A process killed while it held the source (kill
// -9 during a first attach, say) leaves its scan's lease and its hold
// until they expire (ten minutes after their last renewal): check that
// the process is gone, and force. A snapshot file is not removed (delete
// it yourself; a later attach gets a new dataset id and does not replace
// a file of another dataset without ReplaceForeignFile).
func Detach(ctx context.Context, path, table, column string) error {
	return DetachWith(ctx, path, table, column, DetachOptions{})
}

// DetachWith is Detach with options.
func DetachWith(ctx context.Context, path, table, column string, opts DetachOptions) error {
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
	if opts.BusyTimeout == 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	if opts.BusyTimeout < 0 {
		return fmt.Errorf("detach: busy timeout %v: %w", opts.BusyTimeout, ErrBadConfig)
	}
	return store.Detach(ctx, path, table, column, opts.BusyTimeout, opts.Force)
}
