package rebuild

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// TestCatchUpNeverSkipsEntriesCompactedMeanwhile: another index compacts
// the log while this one's catch-up is between two chunks of it. The
// catch-up must not skip the entries deleted under it: every id
// committed before the call is fetched (by Missing and Fetched, in NFC
// and NFD), the filter is dropped and rebuilt.
func TestCatchUpNeverSkipsEntriesCompactedMeanwhile(t *testing.T) {
	ctx := context.Background()
	var once sync.Once
	var armed atomic.Bool
	var other *Index
	ref, ix, o := behindByChunks(t, "gap", func() {
		if armed.Load() {
			once.Do(func() { // after the first chunk: compact up to the head
				if err := other.Rebuild(ctx); err != nil {
					t.Error(err)
				}
			})
		}
	})
	other = o
	armed.Store(true)
	before := ix.Stats()
	p := &probe{ref: ref}
	for i := range 5500 {
		forms := ref.id(i).forms
		p.keys = append(p.keys, forms[i%len(forms)])
		p.idx = append(p.idx, i)
		p.before = append(p.before, 2)
	}
	missing, err := ix.Missing(ctx, p.keys)
	if err != nil {
		t.Fatal(err)
	}
	if errs := p.judgeMissing(missing); len(errs) > 0 {
		t.Fatalf("%d committed ids answered not fetched after the log was compacted during the catch-up; first: %v", len(errs), errs[0])
	}
	armed.Store(false)
	if err := ix.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.Dropped != before.Dropped+1 || !st.Serving {
		t.Fatalf("dropped %d → %d, serving %v: want the filter dropped and rebuilt", before.Dropped, st.Dropped, st.Serving)
	}
	for j := range p.keys {
		if j%97 != 0 {
			continue
		}
		if ok, err := ix.Fetched(ctx, p.keys[j]); err != nil || !ok {
			t.Fatalf("Fetched(%+q) = %v, %v after the rebuild", p.keys[j], ok, err)
		}
	}
}

// TestCatchUpWaitersNeverTrustAnIncompleteRead: while one call's catch-up
// is between two chunks of the log, another call probes and waits for
// that catch-up (a flight), and another index compacts the log. The catch-up fails
// (ErrCannotCatchUp); the call that waited must not take the generation
// the failed read reached as caught up: its answer is exact too.
func TestCatchUpWaitersNeverTrustAnIncompleteRead(t *testing.T) {
	ctx := context.Background()
	var hook atomic.Pointer[func()]
	ref, ix, other := behindByChunks(t, "wait", func() {
		if f := hook.Load(); f != nil {
			(*f)()
		}
	})
	p := &probe{ref: ref}
	for i := range 5500 {
		forms := ref.id(i).forms
		p.keys = append(p.keys, forms[(i+1)%len(forms)])
		p.idx = append(p.idx, i)
		p.before = append(p.before, 2)
	}
	var once sync.Once
	waiter := make(chan []bool, 1)
	hook.Store(ptr(func() {
		once.Do(func() {
			go func() { // a call that probes now, then waits for this catch-up
				missing, err := ix.Missing(ctx, p.keys)
				if err != nil {
					t.Error(err)
				}
				waiter <- missing
			}()
			// Let it probe and reach the flight (if it does not, it is
			// checked the same), then compact up to the head.
			time.Sleep(100 * time.Millisecond)
			if err := other.Rebuild(ctx); err != nil {
				t.Error(err)
			}
		})
	}))
	missing, err := ix.Missing(ctx, p.keys)
	if err != nil {
		t.Fatal(err)
	}
	if errs := p.judgeMissing(missing); len(errs) > 0 {
		t.Fatalf("the leading call: %d committed ids answered not fetched; first: %v", len(errs), errs[0])
	}
	if errs := p.judgeMissing(<-waiter); len(errs) > 0 {
		t.Fatalf("the waiting call: %d committed ids answered not fetched; first: %v", len(errs), errs[0])
	}
}

// behindByChunks opens an index on 500 rows and a second one that
// compacts the log to one entry at each rebuild, then commits 5,000 more
// rows: the first index's filter is several chunks of log behind.
func behindByChunks(t *testing.T, name string, chunk func()) (ref *reference, ix, other *Index) {
	t.Helper()
	ref = newReference(name, 6000)
	seed := make([]string, 500)
	for i := range seed {
		seed[i] = ref.id(i).stored
	}
	path := modeDB(t, "wal", []string{"records"}, seed...)
	ref.committed(0, len(seed))
	// Calls take every entry they lack in themselves (inline), the chunks
	// going through chunk; nothing catches up between calls.
	ix = open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver(), knobs: knobs{catchUpChunk: chunk, inline: true, noFollow: true}},
		Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb"}})
	other = open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: path + ".other.sfb", LogRetain: 1, AutoRebuild: AutoRebuild{Off: true}}})
	later := make([]string, 0, 5000)
	for i := len(seed); i < len(seed)+5000; i++ {
		later = append(later, ref.id(i).stored)
	}
	insertInto(t, rawDB(t, path), "records", later...)
	ref.committed(len(seed), len(seed)+5000)
	return ref, ix, other
}
