package gate

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

// Stored spellings noted by several goroutines at once are all kept, each
// once per key, and a key's list read meanwhile is never torn.
func TestAddSpellingsConcurrent(t *testing.T) {
	v := NewView(nil, nil, nil, 0, Mark{})
	const writers, keys = 4, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keys {
				// every writer notes its own spelling and a shared one
				v.AddSpellings([][2]string{
					{fmt.Sprintf("k%d", k), fmt.Sprintf("own%d-%d", w, k)},
					{fmt.Sprintf("k%d", k), fmt.Sprintf("shared%d", k)},
				})
				if got := v.Spellings(fmt.Sprintf("k%d", k)); !slices.Contains(got, fmt.Sprintf("own%d-%d", w, k)) {
					t.Errorf("writer %d, key %d: its spelling is not in %q", w, k, got)
				}
			}
		}()
	}
	wg.Wait()
	for k := range keys {
		got := v.Spellings(fmt.Sprintf("k%d", k))
		if len(got) != writers+1 {
			t.Fatalf("key %d: %d spellings %q, want %d", k, len(got), got, writers+1)
		}
		slices.Sort(got)
		if len(slices.Compact(got)) != writers+1 {
			t.Fatalf("key %d: a spelling kept twice: %q", k, got)
		}
	}
	if n := len(v.AllSpellings()); n != keys*(writers+1) {
		t.Fatalf("AllSpellings: %d pairs, want %d", n, keys*(writers+1))
	}
}

// Noting one stored spelling costs the same whatever the view holds
// already (it once copied every spelling held).
func BenchmarkAddSpellings(b *testing.B) {
	for _, held := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			v := NewView(nil, nil, nil, 0, Mark{})
			pairs := make([][2]string, held)
			for i := range pairs {
				pairs[i] = [2]string{fmt.Sprintf("é%d", i), fmt.Sprintf("e\u0301%d", i)}
			}
			v.AddSpellings(pairs)
			i := 0
			for b.Loop() {
				v.AddSpellings([][2]string{{fmt.Sprintf("new%d", i), fmt.Sprintf("spelled%d", i)}})
				i++
			}
		})
	}
}
