// Package ops is the operator's side of the library: the cron job's
// rebuild (BuildSnapshot), a source's status (Describe), the sources a
// database records (Sources), removing the library from a database
// (Detach), and loading a snapshot the cron job wrote into a running
// index (Reload). The command line (cmd/syncfilter) is built on it; a sync
// engine needs only package rebuild.
package ops

import (
	"path/filepath"

	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/rebuild/internal/upkeep"
)

// Errors of the operator's calls, wrapped with context; test with
// errors.Is. A snapshot refused at open is not an error of the app's
// calls: it is logged (rebuild.DBConfig.Logger) and Wait says why.
var (
	// ErrUnsafeTarget: a snapshot would replace a file the library must
	// not: the database or one of its files, a directory, a file that is
	// not a snapshot, or another dataset's snapshot (the last two may be
	// forced: Source.ReplaceForeignFile).
	ErrUnsafeTarget = store.ErrUnsafeTarget

	// ErrNotVouched: the database has no record of saving this snapshot
	// (a backup restored, a forged or foreign file).
	ErrNotVouched = store.ErrNotVouched

	// ErrImplausible: a snapshot claims a filter far larger than the
	// database warrants (PlausibleFactor); refused before it is read.
	ErrImplausible = store.ErrImplausible

	// ErrCannotCatchUp: a filter covers a generation the log no longer
	// (or not yet) holds, or holds other entries under.
	ErrCannotCatchUp = store.ErrCannotCatchUp

	// ErrNotAttached: Detach found no record of the source.
	ErrNotAttached = store.ErrNotAttached

	// ErrHeld: Detach refused while a rebuild's scan (in any process)
	// holds a lease on the source.
	ErrHeld = store.ErrHeld
)

// PlausibleFactor bounds the snapshots an index loads: at most this many
// times the bits its database's size warrants.
const PlausibleFactor = upkeep.PlausibleFactor

// DefaultSnapshot is where `syncfilter rebuild --all` saves the snapshot
// of a source that has none recorded: beside the database, named after it
// and the source ("app.db" → "app.db.records.id.sfb"; the library's own
// table: "app.db.fetched.sfb").
func DefaultSnapshot(dbPath, table, column string) string {
	if table == "" {
		return dbPath + ".fetched.sfb"
	}
	return filepath.Join(filepath.Dir(dbPath), filepath.Base(dbPath)+"."+table+"."+column+".sfb")
}

func keeper(ix *rebuild.Index) *upkeep.Keeper { _, k := upkeep.Unwrap(ix); return k }

func background(db *rebuild.DB) *upkeep.DB { bg, _ := upkeep.Unwrap(db); return bg }
