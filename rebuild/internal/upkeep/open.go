package upkeep

import (
	"context"
	"errors"
	"fmt"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// Open checks the source (before anything is written) and asks for what
// makes the filter ready: the snapshot's load, or the first scan, each
// started by the first call or a Wait. An empty table (an app before its
// first sync) and the library's own table are attached and scanned
// before Open returns, so that a filter serves from the first call.
func (k *Keeper) Open(ctx context.Context) error {
	now, err := k.look(ctx)
	if err != nil || !now {
		return err
	}
	// Not inside the index's life: a Progress call of this scan may close
	// the index.
	err = k.db.run(ctx, kindRebuild, k, reason{text: "first scan"}).finish()
	if err != nil && !errors.Is(err, store.ErrSuspended) && k.G.Serving() == nil {
		return fmt.Errorf("open index: %w", err)
	}
	return nil
}

// look reads the source and asks for what the index needs; now reports a
// first scan to run before Open returns.
func (k *Keeper) look(ctx context.Context) (now bool, err error) {
	t, ok := k.life.Enter()
	if !ok {
		return false, store.ErrClosed
	}
	defer k.life.Leave(t)
	k.setOpening(true) // the first scan is asked below, not by the gate's repair as well
	c, err := k.G.Look(ctx)
	k.setOpening(false)
	if err != nil {
		return false, fmt.Errorf("open index: %w", err)
	}
	defer c.End()
	src := c.Src()
	if src.VersionErr != nil { // refused at open, as the key column is; after a migration, Need alone fails
		return false, fmt.Errorf("open index: %w", src.VersionErr)
	}
	c.Prepare(ctx)
	switch {
	case k.db.ReadOnly:
		switch {
		case !src.Logged || !src.Scanned:
			k.setErr(errors.New("no complete record of this source in the database (attach it with a writable open or `syncfilter rebuild`)"))
		case k.cfg.Snapshot == "":
			k.setErr(errors.New("no snapshot configured"))
		default:
			k.AskLoad()
		}
	case !src.Logged || !src.Scanned:
		empty := src.OwnMissing
		if !empty {
			empty, _ = c.Empty(ctx)
		}
		if empty {
			return true, nil
		}
		// Attached and scanned in the background, in that order, so that
		// every row is in the scan or the log; SQLite answers meanwhile,
		// and the app's writes never make Open wait. Both start once the
		// first call is answered (or at Wait), as a repair does: the
		// attach's DDL would make the app's connections parse the schema
		// again under that call.
		k.askFirstScan()
	case k.cfg.Snapshot != "":
		k.checkTarget(c.F, src)
		k.AskLoad()
	default:
		k.askRepair(errors.New("no snapshot configured"))
	}
	return false, nil
}

func (k *Keeper) setOpening(on bool) {
	k.db.mu.Lock()
	k.mu.opening = on
	k.db.mu.Unlock()
}
