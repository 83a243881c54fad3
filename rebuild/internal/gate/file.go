package gate

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// File is the database file the DB has open, shared by the calls that use
// it: the store closes when the DB let go of it (the app replaced the
// file, or Close) and the last call using it ended.
type File struct {
	St   *store.DB
	refs atomic.Int64 // 1 while it is the current file, +1 per user
	N    uint64       // 1 for the file opened first, +1 per file opened since
}

// Acquire takes a reference; false if the file closed already.
func (f *File) Acquire() bool {
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

// Release drops a reference; the last one closes the store.
func (f *File) Release() {
	if f.refs.Add(-1) == 0 {
		f.St.Close()
	}
}

// Explain marks err ErrReplaced if the file is no longer the one at the
// path: a read of a replaced file fails with whatever it met.
func (f *File) Explain(err error) error {
	if err == nil || errors.Is(err, store.ErrReplaced) {
		return err
	}
	if serr := f.St.SameFile(); errors.Is(serr, store.ErrReplaced) {
		return fmt.Errorf("%w (%w)", serr, err)
	}
	return err
}

// Files is the database file at the path: one stat per call tells that
// it is still the one opened (same device and inode, one name). A file
// deleted and created again is opened anew; what the old one's filters
// covered is dropped by the calls that meet the new one.
type Files struct {
	cur       atomic.Pointer[File]
	reopening chan struct{}                            // capacity 1: one reopen at a time
	open      func(context.Context) (*store.DB, error) // opens the file now at the path
}

// NewFiles starts with st, opened at the path; open opens it again.
func NewFiles(st *store.DB, open func(context.Context) (*store.DB, error)) *Files {
	fs := &Files{reopening: make(chan struct{}, 1), open: open}
	f := &File{St: st, N: 1}
	f.refs.Store(1)
	fs.cur.Store(f)
	return fs
}

// Current returns the current file without a reference (nil once closed).
func (fs *Files) Current() *File { return fs.cur.Load() }

// Get returns the file now at the path with a reference taken for the
// caller (Release it).
func (fs *Files) Get(ctx context.Context) (*File, error) {
	for {
		f := fs.cur.Load()
		if f == nil {
			return nil, store.ErrClosed
		}
		err := f.St.SameFile()
		switch {
		case err == nil:
			if f.Acquire() {
				return f, nil
			}
			continue // let go of meanwhile: look again
		case !errors.Is(err, store.ErrReplaced):
			return nil, err // a second name: refused until it is gone
		}
		if err := fs.reopen(ctx, f); err != nil {
			return nil, err
		}
	}
}

// reopen opens the file now at the path in place of old, which closes
// once the calls using it end.
func (fs *Files) reopen(ctx context.Context, old *File) error {
	select {
	case fs.reopening <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	defer func() { <-fs.reopening }()
	if fs.cur.Load() != old { // another call reopened it
		return nil
	}
	st, err := fs.open(ctx)
	if err != nil {
		return fmt.Errorf("check database: %w; open the file now at the path: %w", store.ErrReplaced, err)
	}
	nf := &File{St: st, N: old.N + 1}
	nf.refs.Store(1)
	if !fs.cur.CompareAndSwap(old, nf) { // closed meanwhile
		st.Close()
		return store.ErrClosed
	}
	old.Release()
	return nil
}

// Close lets go of the current file; it closes once its last user ends.
func (fs *Files) Close() {
	if f := fs.cur.Swap(nil); f != nil {
		f.Release()
	}
}
