package ops

import (
	"context"
	"fmt"

	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/rebuild/internal/upkeep"
)

// Report describes a snapshot written by BuildSnapshot.
type Report = upkeep.Report

// ScanCounts are what one full scan of the source found.
type ScanCounts = upkeep.ScanCounts

// BuildSnapshot is the cron job: it scans the source and atomically
// replaces src.Snapshot with a fresh filter, attaching the source first if
// no app has yet. It does not read the old snapshot and leaves nothing
// running. A kill at any moment leaves the previous file; a failure after
// its first attach of the source undoes the attach. A snapshot path the
// library may not write to is refused before anything is written. A
// running app picks the new file up with Reload, or at its next open.
func BuildSnapshot(ctx context.Context, dcfg rebuild.DBConfig, src rebuild.Source) (Report, error) {
	src.NoAutoRebuild, src.NoSaveOnClose = true, true
	return upkeep.BuildSnapshot(ctx, dcfg, src, src.Snapshot, dcfg.ReadOnly)
}

// Reload replaces the filter a running index serves with its snapshot
// file (one the cron job wrote, say), caught up on everything committed
// since; if the file is refused, nothing changes and the reason is
// returned.
func Reload(ctx context.Context, ix *rebuild.Index) error {
	if err := keeper(ix).Reload(ctx); err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	return nil
}
