package rebuild

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// Attached is a source the database records (Sources): a collection some
// index or cron job attached.
type Attached struct {
	Table, Column string   // "" and "" for the library's own table
	DatasetID     [16]byte // the random id its snapshots carry
	CreatedAt     string   // when it was first attached (UTC, RFC 3339)
	Snapshot      string   // where its last snapshot was saved; "" if none was recorded
}

// Sources lists the sources the database records, in the order they were
// first attached.
func (db *DB) Sources(ctx context.Context) ([]Attached, error) {
	in, ok := db.life.EnterCall() // Suspend waits for it
	if !ok {
		return nil, ErrClosed
	}
	defer db.life.LeaveCall(in)
	f, err := db.file(ctx)
	if err != nil {
		return nil, err
	}
	defer f.release()
	c, err := f.st.Reader(ctx)
	if err != nil {
		return nil, err
	}
	defer f.st.Release(c)
	list, err := store.List(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("list sources: %w", err)
	}
	out := make([]Attached, len(list))
	for i, l := range list {
		out[i] = Attached{Table: l.Table, Column: l.Column, DatasetID: l.DatasetID, CreatedAt: l.CreatedAt, Snapshot: l.Snapshot}
		if l.Table == store.OwnTable && l.Column == store.OwnColumn {
			out[i].Table, out[i].Column = "", ""
		}
	}
	return out, nil
}

// Sources lists the sources the database at path records, opening it
// read-only (see DB.Sources).
func Sources(ctx context.Context, cfg DBConfig) ([]Attached, error) {
	cfg.ReadOnly = true
	db, err := OpenDB(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer db.Close(ctx)
	return db.Sources(ctx)
}

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

// DatasetID returns the random id the database gave the source when it
// was first attached (snapshots carry it); attached is false for a
// read-only index on a source never attached.
func (ix *Index) DatasetID() (id [16]byte, attached bool) {
	if src := ix.source(); src != nil && src.Row {
		return src.DatasetID, true
	}
	return id, false
}

// source returns the source as the index last knew it: the serving
// filter's, or the one last resolved.
func (ix *Index) source() *store.Source {
	if s := ix.filter(); s != nil {
		return s.src
	}
	if b := ix.bound.Load(); b != nil {
		return b.src
	}
	return nil
}
