package rebuild

import (
	"runtime/debug"
	"sync/atomic"
)

// The fast freshness check. In WAL mode, every SQLite connection of every
// process shares the wal-index (the database's "-shm" file, mapped in
// memory). Its header, documented in SQLite's walformat.html, starts with
// two copies of a 48-byte WalIndexHdr; a writer updates them at each
// commit (the change counter iChange, the last frame mxFrame, the salts
// and checksums), the second copy first, then the first. A reader that
// finds both copies equal to the header it saw at its last exact read of
// the generation knows that no transaction committed since: the
// generation and floor it read then are still exact. Anything else — the
// copies differ (a writer is between them), the header changed, no -shm
// (rollback-journal mode), another platform — falls back to the exact
// query. The check costs a few dozen nanoseconds; the query about 2 µs.

// walHeader is the first copy of the WalIndexHdr, as 32-bit words in the
// host's byte order (compared, never interpreted).
type walHeader [12]uint32

// walIndex is a read-only view of a -shm file's first page, shared by
// every index of the process on that file and never unmapped (see
// walindex_unix.go for why its descriptor is never closed).
type walIndex struct {
	words  []uint32    // the mapped page, as words
	file   any         // the descriptor, kept open
	path   string      // the -shm file's name
	unmap  func()      // unmaps and closes, once the file is gone (walindex_unix.go)
	broken atomic.Bool // a read faulted, or the file is gone: no fast path any more
}

// header returns the wal-index header if both copies agree. A fault while
// reading (the file truncated under the mapping, which SQLite's own lock
// prevents while the index has a connection open) disables the fast path
// instead of crashing the process.
func (w *walIndex) header() (h walHeader, ok bool) {
	if w == nil || len(w.words) < 24 || w.broken.Load() {
		return h, false
	}
	defer func() {
		if recover() != nil {
			w.broken.Store(true)
			h, ok = walHeader{}, false
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var h2 walHeader
	for i := range h {
		h[i] = atomic.LoadUint32(&w.words[i])
	}
	for i := range h2 {
		h2[i] = atomic.LoadUint32(&w.words[12+i])
	}
	// isInit (the low byte of word 3 on little-endian hosts; checked as a
	// whole word on every host) must be set for the header to mean anything.
	return h, h == h2 && h[3] != 0
}

// close is nothing: the mapping outlives the index (see walIndex).
func (w *walIndex) close() {}
