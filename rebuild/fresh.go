package rebuild

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// freshness is the check that comes before every answer: has anything
// changed since the last check? Three things can have, and each moves a
// counter that the caches of every collection compare with:
//
//   - the file at the path is no longer the one opened (the app deleted
//     and created it again): the new file is opened, and every collection
//     starts over on it (view.file);
//   - a transaction committed on any connection of any process:
//     PRAGMA data_version moved on the freshness connection, which never
//     writes (view.ver); each collection then reads its log's head again;
//   - the schema changed (DDL: a migration, a dropped trigger):
//     PRAGMA schema_version moved (view.schema); each collection then
//     checks its source again.
//
// The check is one stat of the path and one statement (about two
// microseconds together). Calls arriving while a check runs wait for the
// next one to start, which then serves them all: every call is answered
// from a check that began after the call did.
type freshness struct {
	turn    chan struct{}        // the freshness connection: one check at a time
	started atomic.Uint64        // checks begun
	last    atomic.Pointer[view] // the newest check's result

	// Guarded by turn:
	data, schema int64  // the versions last read
	ver, sver    uint64 // moved on by every change of data, of schema
}

// view is what a freshness check saw.
type view struct {
	check  uint64 // the check's number: it began after every call that arrived before it
	f      *file
	ver    uint64 // moves on at every commit, schema change or new file
	schema uint64 // moves on at every schema change or new file
}

func (fr *freshness) init(ctx context.Context, f *file) error {
	fr.turn = make(chan struct{}, 1)
	d, s, err := f.st.Versions(ctx)
	if err != nil {
		return err
	}
	fr.data, fr.schema, fr.ver, fr.sver = d, s, 1, 1
	fr.last.Store(&view{f: f, ver: 1, schema: 1})
	return nil
}

// check returns a view from a check that began after the call, with a
// reference to its file taken for the caller (release it when done).
func (db *DB) check(ctx context.Context) (*view, error) {
	fr := &db.fresh
	for {
		arrived := fr.started.Load()
		select {
		case fr.turn <- struct{}{}:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		v := fr.last.Load()
		var err error
		if v.check <= arrived {
			v, err = db.checkTurn(ctx)
		}
		<-fr.turn
		if err != nil {
			return nil, err
		}
		if v.f.acquire() {
			return v, nil
		}
		// The file was let go of (replaced) since: check again.
	}
}

// checkTurn runs one check; the caller holds fr.turn.
func (db *DB) checkTurn(ctx context.Context) (*view, error) {
	fr := &db.fresh
	n := fr.started.Add(1)
	f := db.cur.Load()
	if f == nil {
		return nil, ErrClosed
	}
	if err := f.st.SameFile(); err != nil {
		if !errors.Is(err, store.ErrReplaced) {
			return nil, err
		}
		nf, rerr := db.reopen(ctx, f)
		if rerr != nil {
			return nil, fmt.Errorf("%w; open the new file: %w", err, rerr)
		}
		f = nf
	}
	d, s, err := f.st.Versions(ctx)
	if err != nil {
		return nil, err
	}
	if s != fr.schema {
		fr.sver++
		fr.ver++
	} else if d != fr.data {
		fr.ver++
	}
	fr.data, fr.schema = d, s
	v := &view{check: n, f: f, ver: fr.ver, schema: fr.sver}
	fr.last.Store(v)
	return v, nil
}

// reopen opens the file now at the path in place of old, which closes
// once the calls using it end. Every collection notices the new file at
// its next call and starts over on it (bypass, then a rebuild). The
// caller holds fr.turn.
func (db *DB) reopen(ctx context.Context, old *file) (*file, error) {
	st, err := store.Open(ctx, db.path.Abs, store.Options{ReadOnly: db.cfg.ReadOnly, Readers: db.cfg.Readers, BusyTimeout: db.cfg.BusyTimeout})
	if err != nil {
		return nil, err
	}
	d, s, err := st.Versions(ctx)
	if err != nil {
		st.Close()
		return nil, err
	}
	nf := &file{st: st, n: old.n + 1}
	nf.refs.Store(1)
	if !db.cur.CompareAndSwap(old, nf) { // Close let go of old meanwhile
		st.Close()
		return nil, ErrClosed
	}
	old.release()
	fr := &db.fresh
	fr.data, fr.schema = d, s
	fr.ver++
	fr.sver++
	if db.work != nil {
		db.work.wake() // the sources are attached again there on their next call
	}
	return nf, nil
}
