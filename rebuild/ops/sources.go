package ops

import (
	"context"
	"strings"

	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/rebuild/internal/upkeep"
)

// Attached is a source the database records: a collection some index or
// cron job attached.
type Attached struct {
	Table, Column string   // "" and "" for the library's own table
	DatasetID     [16]byte // the random id its snapshots carry
	CreatedAt     string   // when it was first attached (UTC, RFC 3339)
	Snapshot      string   // where its last snapshot was saved; "" if none was recorded
}

// Sources lists the sources the database records, in the order they were
// first attached, opening it read-only.
func Sources(ctx context.Context, cfg rebuild.DBConfig) ([]Attached, error) {
	cfg.ReadOnly = true
	db, err := upkeep.OpenDB(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer db.Close(ctx)
	return list(ctx, db)
}

// SourcesOf lists the sources of a database the caller has open.
func SourcesOf(ctx context.Context, db *rebuild.DB) ([]Attached, error) {
	return list(ctx, background(db))
}

func list(ctx context.Context, db *upkeep.DB) ([]Attached, error) {
	l, err := db.Sources(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Attached, len(l))
	for i, s := range l {
		out[i] = Attached{Table: s.Table, Column: s.Column, DatasetID: s.DatasetID, CreatedAt: s.CreatedAt, Snapshot: s.Snapshot}
		if s.Table == store.OwnTable && s.Column == store.OwnColumn {
			out[i].Table, out[i].Column = "", ""
		}
	}
	return out, nil
}

// DatasetID returns the random id the database gave a source when it was
// first attached (its snapshots carry it); attached is false if the
// database records no such source.
func DatasetID(ctx context.Context, cfg rebuild.DBConfig, table, column string) (id [16]byte, attached bool, err error) {
	l, err := Sources(ctx, cfg)
	if err != nil {
		return id, false, err
	}
	for _, s := range l {
		if strings.EqualFold(s.Table, table) && strings.EqualFold(s.Column, column) {
			return s.DatasetID, true, nil
		}
	}
	return id, false, nil
}

// DetachOptions are Detach's settings beyond the source's names.
type DetachOptions struct {
	// Force detaches even while a rebuild's scan holds the source
	// (ErrHeld): once its process is gone, its lease lasts ten minutes.
	Force bool
}

// Detach removes everything the library added to the database for one
// source, in one transaction: its triggers, its log and spellings tables,
// its records; with the last source gone, the shared tables too (and the
// library's own table, for table and column empty). The schema
// (sqlite_master) is then what it was before the first attach. A source
// not attached: ErrNotAttached. A snapshot file is not removed.
func Detach(ctx context.Context, cfg rebuild.DBConfig, table, column string, opts DetachOptions) error {
	cfg.ReadOnly = false
	return upkeep.Detach(ctx, cfg, table, column, opts.Force)
}
