package syncfilter

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestDeferredBuildsTheSameFilter: keys hashed before the size was known,
// then built, give byte for byte the filter a Builder with the same
// parameters gives, at several sizes around the chunk boundaries.
func TestDeferredBuildsTheSameFilter(t *testing.T) {
	for _, n := range []int{0, 1, 31, 32, 33, 4095, 4096, 4097, 10_000} {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("key-%d-e\u0301", i) // NFD: canonicalized on the way
		}
		d := NewDeferred()
		for start := 0; start < n; start += 1000 {
			if err := d.AddBatch(keys[start:min(start+1000, n)]); err != nil {
				t.Fatal(err)
			}
		}
		if d.Len() != n {
			t.Fatalf("Len = %d, want %d", d.Len(), n)
		}
		p, err := NewParams(uint64(max(n, 1)), 0.01)
		if err != nil {
			t.Fatal(err)
		}
		p.Key = d.Key()
		got, err := d.Builder(p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := NewBuilder(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := want.AddBatch(keys); err != nil {
			t.Fatal(err)
		}
		gi, wi := got.Image(), want.Image()
		if !slices.Equal(gi.Words(), wi.Words()) || gi.items != wi.items || gi.ones != wi.ones {
			t.Fatalf("n = %d: deferred filter differs (items %d/%d, ones %d/%d)", n, gi.items, wi.items, gi.ones, wi.ones)
		}
	}
}

func TestDeferredRefusals(t *testing.T) {
	d := NewDeferred()
	var ke *KeyError
	if err := d.AddBatch([]string{"ok", "bad\xff"}); !errors.As(err, &ke) || ke.Index != 1 || d.Len() != 0 {
		t.Fatalf("invalid key: %v, Len %d", err, d.Len())
	}
	p, _ := NewParams(10, 0.01)
	if _, err := d.Builder(p); !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("another key: %v", err)
	}
	p.Key = d.Key()
	if _, err := d.Builder(p); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Builder(p); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Builder: %v", err)
	}
	if err := d.AddBatch([]string{"x"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("AddBatch after Builder: %v", err)
	}
}
