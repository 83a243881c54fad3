//go:build unix

package rebuild

import (
	"os"
	"syscall"
	"unsafe"
)

// mapWalIndex maps the first page of path+"-shm" read-only, or returns
// nil (no -shm: not in WAL mode, or not created yet).
func mapWalIndex(path string) *walIndex {
	f, err := os.Open(path + "-shm")
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() < 136 {
		return nil
	}
	const size = 4096
	b, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	words := unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), 136/4)
	return &walIndex{words: words, unmap: func() { _ = syscall.Munmap(b) }}
}
