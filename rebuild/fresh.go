package rebuild

import (
	"context"
	"errors"
	"fmt"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// The file check before every answer. A call answers only about the file
// now at the path: one stat tells that the file is still the one opened
// (same device and inode, one name). A file deleted and created again (the
// app's "clear data", a restore) is opened anew, and every collection
// starts over on it at its next call: its filter covers the old file only
// and is dropped, the source is resolved in the new file, attached there
// again if needed and rebuilt, SQLite answering meanwhile. What changed
// inside the file is told by each call's probe (call.go): the schema
// cookie and the log's head, read in the same statement as the answer.

// file returns the database file now at the path, with a reference taken
// for the caller (release it when done).
func (db *DB) file(ctx context.Context) (*file, error) {
	for {
		f := db.cur.Load()
		if f == nil {
			return nil, ErrClosed
		}
		err := f.st.SameFile()
		switch {
		case err == nil:
			if f.acquire() {
				return f, nil
			}
			continue // let go of meanwhile: look again
		case !errors.Is(err, store.ErrReplaced):
			return nil, err // a second name: refused until it is gone
		}
		if err := db.reopen(ctx, f); err != nil {
			return nil, err
		}
	}
}

// reopen opens the file now at the path in place of old, which closes once
// the calls using it end; one reopen at a time (the turn channel, which a
// waiting call abandons when its ctx ends).
func (db *DB) reopen(ctx context.Context, old *file) error {
	select {
	case db.turn <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	defer func() { <-db.turn }()
	if db.cur.Load() != old { // another call reopened it
		return nil
	}
	st, err := store.Open(ctx, db.path.Abs, store.Options{Driver: db.drv, ReadOnly: db.cfg.ReadOnly, Readers: db.cfg.Readers, BusyTimeout: db.cfg.BusyTimeout, Knobs: db.cfg.knobs})
	if err != nil {
		return fmt.Errorf("check database: %w; open the file now at the path: %w", store.ErrReplaced, err)
	}
	nf := &file{st: st, n: old.n + 1}
	nf.refs.Store(1)
	if !db.cur.CompareAndSwap(old, nf) { // closed meanwhile
		st.Close()
		return ErrClosed
	}
	old.release()
	return nil
}
