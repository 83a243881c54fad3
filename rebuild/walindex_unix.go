//go:build unix

package rebuild

import (
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// The -shm file is opened once per process and never closed. SQLite locks
// it with POSIX advisory locks, and closing ANY descriptor of a file
// releases every such lock the process holds on it: a close here would
// drop the shared lock SQLite's own connections hold, let another process
// truncate the file under their mappings (SIGBUS) or recover the WAL while
// they read it. Descriptors are kept in a registry keyed by the file's
// identity, reused by later indexes on the same database, and capped.

type shmKey struct{ dev, ino uint64 }

var shmFiles = struct {
	sync.Mutex
	m map[shmKey]*walIndex
}{m: map[shmKey]*walIndex{}}

// maxShmFiles caps the descriptors kept open; past it, new databases get
// no fast path (every check is exact).
const maxShmFiles = 256

// mapWalIndex returns a read-only view of the first page of path+"-shm",
// or nil (no -shm: not in WAL mode; registry full; mapping refused).
func mapWalIndex(path string) *walIndex {
	name := path + "-shm"
	var st syscall.Stat_t
	if err := syscall.Stat(name, &st); err != nil || st.Size < 136 {
		return nil
	}
	key := shmKey{uint64(st.Dev), uint64(st.Ino)}
	shmFiles.Lock()
	defer shmFiles.Unlock()
	if w, ok := shmFiles.m[key]; ok {
		return w
	}
	if len(shmFiles.m) >= maxShmFiles/2 {
		sweepShm()
	}
	if len(shmFiles.m) >= maxShmFiles {
		return nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil
	}
	var fst syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &fst); err != nil || uint64(fst.Dev) != key.dev || uint64(fst.Ino) != key.ino {
		shmFiles.m[key] = nil // replaced between stat and open: keep the descriptor, no fast path
		leaked = append(leaked, f)
		return nil
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, 4096, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		shmFiles.m[key] = nil
		leaked = append(leaked, f)
		return nil
	}
	w := &walIndex{words: unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), 136/4), file: f, path: name,
		unmap: func() { _ = syscall.Munmap(b); _ = f.Close() }}
	shmFiles.m[key] = w
	return w
}

// sweepShm forgets the files no longer at their path (deleted with their
// database, or replaced): no connection can open them again, so closing
// their descriptors releases no lock anyone can contend for. An index
// still reading such a mapping (its -shm deleted under it by hand) faults
// once and falls back to exact checks (walIndex.header).
func sweepShm() {
	for key, w := range shmFiles.m {
		if w == nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(w.path, &st) == nil && uint64(st.Dev) == key.dev && uint64(st.Ino) == key.ino {
			continue
		}
		w.broken.Store(true)
		w.unmap()
		delete(shmFiles.m, key)
	}
}

// leaked holds descriptors that must stay open (see above) without a
// mapping.
var leaked []*os.File
