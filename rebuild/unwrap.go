package rebuild

import (
	"context"

	"github.com/syncfilter/syncfilter/rebuild/internal/upkeep"
)

// The operator's package (rebuild/ops) reaches what it needs through
// upkeep's three functions, set here.
func init() {
	upkeep.Unwrap = func(x any) (*upkeep.DB, *upkeep.Keeper) {
		switch v := x.(type) {
		case *Index:
			return v.db.bg, v.k
		case *DB:
			return v.bg, nil
		}
		return nil, nil
	}
	upkeep.OpenDB = func(ctx context.Context, cfg any) (*upkeep.DB, error) {
		db, err := openDB(ctx, cfg.(DBConfig), false)
		if err != nil {
			return nil, err
		}
		return db.bg, nil
	}
	upkeep.OpenKeeper = func(bg *upkeep.DB, src any) (*upkeep.Keeper, error) {
		s, err := src.(Source).withDefaults(bg.ReadOnly)
		if err != nil {
			return nil, err
		}
		return bg.NewKeeper(s.upkeep(), s.gate(bg.ReadOnly, knobs{}))
	}
}
