package syncbench

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DropCache evicts path's pages from the page cache: its dirty pages are
// written first (fdatasync), then posix_fadvise(POSIX_FADV_DONTNEED). A
// missing file is skipped. Pages mapped by a running process stay.
func DropCache(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("drop cache: %w", err)
	}
	defer f.Close()
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return fmt.Errorf("drop cache: fdatasync %s: %w", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("drop cache: fadvise %s: %w", path, err)
	}
	return nil
}

// Resident returns how many of path's pages are in the page cache, and
// how many it has (mincore over a read-only mapping). A missing or empty
// file has none.
func Resident(path string) (in, pages int, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("resident pages: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("resident pages: %w", err)
	}
	if fi.Size() == 0 {
		return 0, 0, nil
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, 0, fmt.Errorf("resident pages: mmap %s: %w", path, err)
	}
	defer func() { _ = unix.Munmap(m) }()
	ps := os.Getpagesize()
	vec := make([]byte, (len(m)+ps-1)/ps)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return 0, 0, fmt.Errorf("resident pages: mincore %s: %w", path, e)
	}
	for _, v := range vec {
		in += int(v & 1)
	}
	return in, len(vec), nil
}
