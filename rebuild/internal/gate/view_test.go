package gate

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// Stored spellings noted by several goroutines at once are all kept, each
// once per key, and a key's list read meanwhile is never torn.
func TestAddSpellingsConcurrent(t *testing.T) {
	v := NewView(nil, nil, nil, 0, Mark{})
	const writers, keys = 4, 200
	var writing, reading sync.WaitGroup
	done := make(chan struct{})
	reading.Add(1)
	go func() { // a save reading every spelling meanwhile
		defer reading.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			for _, p := range v.AllSpellings() {
				if p[0] == "" || p[1] == "" {
					t.Errorf("AllSpellings: a torn pair %q", p)
					return
				}
			}
		}
	}()
	for w := range writers {
		writing.Add(1)
		go func() {
			defer writing.Done()
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
	writing.Wait()
	close(done)
	reading.Wait()
	for k := range keys {
		got := v.Spellings(fmt.Sprintf("k%d", k))
		if len(got) != writers+1 {
			t.Fatalf("key %d: %d spellings %q, want %d", k, len(got), got, writers+1)
		}
		if len(slices.Compact(slices.Sorted(slices.Values(got)))) != writers+1 {
			t.Fatalf("key %d: a spelling kept twice: %q", k, got)
		}
	}
	if n := len(v.AllSpellings()); n != keys*(writers+1) {
		t.Fatalf("AllSpellings: %d pairs, want %d", n, keys*(writers+1))
	}
}

// Noting one stored spelling costs the same whatever the view holds
// already (a map copied whole on each note cost 0.1 ms at 1,000 held and
// 13.9 ms at 100,000), and so does noting many at once into a new view.
func BenchmarkAddSpellings(b *testing.B) {
	for _, held := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			v := NewView(nil, nil, nil, 0, Mark{})
			pairs := make([][2]string, held)
			for i := range pairs {
				pairs[i] = [2]string{fmt.Sprintf("é%d", i), fmt.Sprintf("e\u0301%d", i)}
			}
			v.AddSpellings(pairs)
			b.ReportAllocs()
			i := 0
			for b.Loop() { // a new key each time (its two strings: about 40 ns of the figure)
				n := strconv.Itoa(i)
				v.AddSpellings([][2]string{{"new" + n, "spelled" + n}})
				i++
			}
		})
	}
}

// BenchmarkAddSpellingsBulk: a view filled with 100,000 spellings at once,
// as a read of the table's stored spellings or a snapshot's load does.
func BenchmarkAddSpellingsBulk(b *testing.B) {
	pairs := make([][2]string, 100_000)
	for i := range pairs {
		pairs[i] = [2]string{fmt.Sprintf("é%d", i), fmt.Sprintf("e\u0301%d", i)}
	}
	b.ReportAllocs()
	for b.Loop() {
		NewView(nil, nil, nil, 0, Mark{}).AddSpellings(pairs)
	}
}
