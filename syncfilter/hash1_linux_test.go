//go:build linux && amd64 && !purego

package syncfilter

import (
	"syscall"
	"testing"
	"unsafe"
)

// TestMaskedLoadStopsAtTheKey puts keys of every length at the very end of
// a readable page followed by an unreadable one: the kernels that load
// the key's own bytes must not touch the next page (a fault would crash
// the test) and must still give the reference digest.
func TestMaskedLoadStopsAtTheKey(t *testing.T) {
	if !cpu.avx512 {
		t.Skip("no AVX-512 on this CPU")
	}
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Mprotect(mem[page:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	for i := range page {
		mem[i] = byte(i*7 + 3)
	}
	key := [32]byte{9, 8, 7}
	h := newKeyHasher(key)
	for n := 0; n <= blockLen; n++ {
		// At n = 0 the pointer is the first byte of the unreadable page.
		s := unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(&mem[0]), page-n)), n)
		want := referenceSum(t, key, string([]byte(s)))
		for _, k := range []int{kernelAVX512, kernelGPRMasked} {
			var got [32]byte
			h.sumWith(k, s, &got)
			if got != want {
				t.Fatalf("kernel %s, len %d at the page end: %x, want %x", kernelNames[k], n, got, want)
			}
		}
	}
}
