package rebuild

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// The file check before every answer. A call answers only about the file
// now at the path: one stat tells that the file is still the one opened
// (same device and inode, one name). A file deleted and created again (the
// app's "clear data", a restore by copy) is opened anew, and every
// collection starts over on it at its next call: its filter covers the
// old file only and is dropped, the source is resolved in the new file,
// attached there again if needed and rebuilt, SQLite answering meanwhile.
// What changed inside the file is told by each call's probe (call.go).

// file is the database file the DB has open, shared by the calls that use
// it: the store closes when the DB let go of it (the app replaced the file,
// or Close) and the last call using it ended.
type file struct {
	st   *store.DB
	refs atomic.Int64 // 1 while it is the DB's current file, +1 per call using it
	n    uint64       // 1 for the file opened first, +1 per file opened since
}

// explain marks err ErrReplaced if the file is no longer the one at the
// path: a read of a file the app replaced meanwhile fails with whatever it
// met (the new file's journal beside the name: "attempt to write a
// readonly database").
func (f *file) explain(err error) error {
	if err == nil || errors.Is(err, ErrReplaced) {
		return err
	}
	if serr := f.st.SameFile(); errors.Is(serr, ErrReplaced) {
		return fmt.Errorf("%w (%w)", serr, err)
	}
	return err
}

// acquire takes a reference; false if the file closed already.
func (f *file) acquire() bool {
	for {
		n := f.refs.Load()
		if n <= 0 {
			return false
		}
		if f.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference; the last one closes the store.
func (f *file) release() {
	if f.refs.Add(-1) == 0 {
		f.st.Close()
	}
}

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
// the calls using it end; one reopen at a time (the reopening turn, which
// a waiting call abandons when its ctx ends).
func (db *DB) reopen(ctx context.Context, old *file) error {
	select {
	case db.reopening <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	defer func() { <-db.reopening }()
	if db.cur.Load() != old { // another call reopened it
		return nil
	}
	st, err := store.Open(ctx, db.path.Abs, db.storeOptions(false))
	if err != nil {
		return fmt.Errorf("check database: %w; open the file now at the path: %w", store.ErrReplaced, err)
	}
	if db.suspended() {
		st.Quiesce(true)
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
