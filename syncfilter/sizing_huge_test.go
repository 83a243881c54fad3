package syncfilter

import (
	"errors"
	"testing"
)

// TestHopelessSizesAreRefused: key counts no filter within MaxBits can
// hold are refused with ErrTooLarge (by a closed-form bound, before any
// Poisson sum), while the largest sizes that fit are still planned.
func TestHopelessSizesAreRefused(t *testing.T) {
	for _, n := range []uint64{1<<64 - 1, 1 << 40, 1 << 37} {
		if _, err := NewParams(n, 0.01); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("NewParams(%d, 0.01) = %v, want ErrTooLarge", n, err)
		}
	}
	p, err := NewParams(1<<32, 0.5) // 2^32 keys at 50%: fits in 2^36 bits
	if err != nil || p.M > MaxBits {
		t.Fatalf("NewParams(2^32, 0.5) = %+v, %v", p, err)
	}
}
