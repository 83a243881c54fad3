package ops

import (
	"context"
	"fmt"
	"strings"

	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/rebuild/internal/upkeep"
	"github.com/syncfilter/syncfilter/snapshot"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// Attached is a source the database records: a collection some index or
// cron job attached.
type Attached struct {
	Table, Column string             // "" and "" for the library's own table
	DatasetID     [16]byte           // the random id its snapshots carry
	CreatedAt     string             // when it was first attached (UTC, RFC 3339)
	Snapshot      string             // where its last snapshot was saved; "" if none was recorded
	Compare       syncfilter.Compare // how it compares ids (Source.Compare)
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
		out[i].Compare, _ = syncfilter.CompareOf(s.Policy)
		if s.Table == store.OwnTable && s.Column == store.OwnColumn {
			out[i].Table, out[i].Column = "", ""
		}
	}
	return out, nil
}

// ReadSnapshot reads the snapshot file at path with the key of the
// positions the database holds for the source the file is of (by its
// dataset id), opening the database read-only. A version 2 file is read
// only so: its header holds the key's id, never the key. A file of no
// source the database lists is ErrNotAttached; a source without a key
// yet reads only a version 1 file, with the key its header holds.
func ReadSnapshot(ctx context.Context, cfg rebuild.DBConfig, path string) (*snapshot.Snapshot, error) {
	h, err := snapshot.ReadHeader(path)
	if err != nil {
		return nil, err
	}
	cfg.ReadOnly = true
	db, err := upkeep.OpenDB(ctx, cfg)
	if err != nil {
		return nil, err
	}
	l, err := db.Sources(ctx)
	db.Close(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range l {
		switch {
		case s.DatasetID != h.DatasetID:
		case s.Keyed:
			return snapshot.ReadFile(path, snapshot.WithKey(s.Key))
		default:
			return snapshot.ReadFile(path)
		}
	}
	return nil, fmt.Errorf("%s: dataset %x: no source of %s: %w", path, h.DatasetID, cfg.Path, ErrNotAttached)
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
