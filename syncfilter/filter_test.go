package syncfilter

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/keycorpus"
	"github.com/syncfilter/syncfilter/normalize"
)

// fixedParams sizes a filter with a fixed hash key so tests are
// deterministic.
func fixedParams(t testing.TB, n uint64, fpr float64) Params {
	t.Helper()
	p, err := NewParams(n, fpr)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Key {
		p.Key[i] = byte(i)
	}
	return p
}

func newFilter(t testing.TB, p Params) *Filter {
	t.Helper()
	f, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// idKeys returns n distinct 36-byte id-like keys drawn from seed.
func idKeys(seed uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]string, n)
	var b [16]byte
	for i := range out {
		binary.LittleEndian.PutUint64(b[0:], r.Uint64())
		binary.LittleEndian.PutUint64(b[8:], r.Uint64())
		out[i] = fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	}
	return out
}

func TestNoFalseNegativesMillionKeys(t *testing.T) {
	keys := idKeys(1, 1_000_000)
	f := newFilter(t, fixedParams(t, uint64(len(keys)), 0.01))
	ctx := context.Background()
	if err := f.AddBatch(ctx, keys[:len(keys)/2]); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys[len(keys)/2 : len(keys)/2+1000] {
		if err := f.Add(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.AddBatch(ctx, keys[len(keys)/2+1000:]); err != nil {
		t.Fatal(err)
	}
	answers, err := f.MightContainBatch(nil, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range answers {
		if !ok {
			t.Fatalf("batch query: key %d %q added but answered absent", i, keys[i])
		}
	}
	for i := 0; i < len(keys); i += 7 {
		if ok, err := f.MightContain(keys[i]); err != nil || !ok {
			t.Fatalf("key %d %q added but MightContain = %v, %v", i, keys[i], ok, err)
		}
	}
	if got := f.Stats().Items; got != uint64(len(keys)) {
		t.Fatalf("Items = %d, want %d", got, len(keys))
	}
}

// TestCanonicalSpellingsShareBits: every spelling of a corpus group has the
// positions of its NFC form, and adding any one spelling makes all of them
// maybe.
func TestCanonicalSpellingsShareBits(t *testing.T) {
	ctx := context.Background()
	for _, g := range keycorpus.Groups() {
		t.Run(g.Name, func(t *testing.T) {
			f := newFilter(t, fixedParams(t, 1000, 0.01))
			want, err := f.Positions(g.NFC)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range g.Spellings {
				got, err := f.Positions(s)
				if err != nil || !slices.Equal(got, want) {
					t.Fatalf("Positions(%+.30q) = %v, %v; want %v (as NFC)", s, got, err, want)
				}
			}
			last := g.Spellings[len(g.Spellings)-1]
			if err := f.Add(ctx, last); err != nil {
				t.Fatal(err)
			}
			for _, s := range g.Spellings {
				if ok, err := f.MightContain(s); err != nil || !ok {
					t.Fatalf("added %+.30q; MightContain(%+.30q) = %v, %v", last, s, ok, err)
				}
			}
		})
	}
}

// TestMeasuredFalsePositiveRate inserts n keys and queries a million keys
// never inserted. The count of maybes is binomial; it must lie within four
// standard deviations of the model's expected rate, which NewParams keeps
// at or below the target.
func TestMeasuredFalsePositiveRate(t *testing.T) {
	const n, queries = 1_000_000, 1_000_000
	keys := idKeys(2, n+queries)
	inserted, absent := keys[:n], keys[n:]
	for _, target := range []float64{0.01, 0.001} {
		t.Run(fmt.Sprint(target), func(t *testing.T) {
			p := fixedParams(t, n, target)
			f := newFilter(t, p)
			if err := f.AddBatch(context.Background(), inserted); err != nil {
				t.Fatal(err)
			}
			answers, err := f.MightContainBatch(nil, absent)
			if err != nil {
				t.Fatal(err)
			}
			fp := 0
			for _, ok := range answers {
				if ok {
					fp++
				}
			}
			model := p.ExpectedFPR(n)
			sd := math.Sqrt(queries * model * (1 - model))
			got := float64(fp) / queries
			t.Logf("target %v: model %.5f%%, measured %.5f%% (%d of %d), %.2f bits/key, k %d",
				target, 100*model, 100*got, fp, queries, p.BitsPerKey(n), p.K)
			if math.Abs(float64(fp)-queries*model) > 4*sd {
				t.Errorf("measured %d false positives, model expects %.0f ± %.0f", fp, queries*model, 4*sd)
			}
			if float64(fp) > queries*target+4*sd {
				t.Errorf("measured rate %v above target %v by more than 4 sd", got, target)
			}
			st := f.Stats()
			if math.Abs(st.EstimatedFPR-model) > 0.1*model {
				t.Errorf("Stats().EstimatedFPR = %v, model %v", st.EstimatedFPR, model)
			}
			if math.Abs(st.EstimatedItems-n) > 0.02*n {
				t.Errorf("Stats().EstimatedItems = %v, want about %d", st.EstimatedItems, n)
			}
		})
	}
}

func TestInvalidKeysAreRefused(t *testing.T) {
	f := newFilter(t, fixedParams(t, 100, 0.01))
	ctx := context.Background()
	bad := "id-\xc3"
	if err := f.Add(ctx, bad); !errors.Is(err, normalize.ErrInvalidUTF8) {
		t.Fatalf("Add: %v", err)
	}
	if _, err := f.MightContain(bad); !errors.Is(err, normalize.ErrInvalidUTF8) {
		t.Fatalf("MightContain: %v", err)
	}
	err := f.AddBatch(ctx, []string{"good-1", "good-2", bad, "good-3"})
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Index != 2 || !errors.Is(err, normalize.ErrInvalidUTF8) {
		t.Fatalf("AddBatch: %v, want KeyError at index 2", err)
	}
	if ok, _ := f.MightContain("good-1"); ok {
		t.Fatalf("AddBatch with an invalid key inserted its valid keys")
	}
	if f.Stats().Items != 0 {
		t.Fatalf("AddBatch with an invalid key changed the item count")
	}
	if err := f.AddBatch(ctx, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	// The answers for the keys before the invalid one come back, wherever
	// it falls in the batch's chunks of 32.
	for _, at := range []int{0, 1, 2, 31, 32, 33, 64, 99} {
		keys := make([]string, at+3)
		for i := range keys {
			keys[i] = []string{"a", "b", "c"}[i%3]
		}
		keys[at], keys[at+2] = bad, bad
		n0 := f.Counters().Queries
		out, err := f.MightContainBatch([]bool{true}, keys)
		if !errors.As(err, &ke) || ke.Index != at || len(out) != 1+at {
			t.Fatalf("bad key at %d: %d answers after the one in dst, %v; want %d and a KeyError at %d", at, len(out)-1, err, at, at)
		}
		for i, ok := range out[1:] {
			if keys[i] != "c" && !ok {
				t.Fatalf("bad key at %d: %q, added, answered absent", at, keys[i])
			}
		}
		if q := f.Counters().Queries - n0; q != uint64(at) {
			t.Fatalf("bad key at %d: %d queries counted, want %d", at, q, at)
		}
	}
}

func TestCloseStopsInsertsNotQueries(t *testing.T) {
	f := newFilter(t, fixedParams(t, 100, 0.01))
	ctx := context.Background()
	if err := f.Add(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	timeout, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := f.waitExited(timeout); err != nil {
		t.Fatalf("writer still running after Close: %v", err)
	}
	if err := f.Add(ctx, "after"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
	if err := f.AddBatch(ctx, []string{"x", "y"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("AddBatch after Close: %v", err)
	}
	if err := f.Reset(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Reset after Close: %v", err)
	}
	if _, err := f.Image(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Image after Close: %v", err)
	}
	if ok, err := f.MightContain("before"); err != nil || !ok {
		t.Fatalf("MightContain after Close = %v, %v", ok, err)
	}
}

func TestCancelledContext(t *testing.T) {
	f := newFilter(t, fixedParams(t, 100, 0.01))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.Add(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Add with cancelled context: %v", err)
	}
}

func TestResetAndCounters(t *testing.T) {
	f := newFilter(t, fixedParams(t, 1000, 0.01))
	ctx := context.Background()
	keys := idKeys(3, 500)
	if err := f.AddBatch(ctx, keys); err != nil {
		t.Fatal(err)
	}
	if _, err := f.MightContainBatch(nil, keys[:100]); err != nil {
		t.Fatal(err)
	}
	absent := 0
	for _, k := range idKeys(4, 100) {
		ans, err := f.MightContainBatch(nil, []string{k})
		if err != nil {
			t.Fatal(err)
		}
		if !ans[0] {
			absent++
		}
	}
	// Single-key MightContain is not counted.
	for _, k := range idKeys(5, 50) {
		if _, err := f.MightContain(k); err != nil {
			t.Fatal(err)
		}
	}
	c := f.Counters()
	if c.Queries != 200 || c.Negatives != uint64(absent) || c.Maybes != uint64(200-absent) {
		t.Fatalf("Counters = %+v, want 200 queries, %d negatives", c, absent)
	}
	if err := f.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	st := f.Stats()
	if st.Items != 0 || st.BitsSet != 0 || st.FillRatio != 0 || st.EstimatedFPR != 0 {
		t.Fatalf("after Reset: %+v", st)
	}
	for _, k := range keys {
		if ok, _ := f.MightContain(k); ok {
			t.Fatalf("after Reset, %q still maybe", k)
		}
	}
}

func TestImageIsAConsistentCopy(t *testing.T) {
	ctx := context.Background()
	f := newFilter(t, fixedParams(t, 10000, 0.01))
	first, second := idKeys(5, 3000), idKeys(6, 3000)
	if err := f.AddBatch(ctx, first); err != nil {
		t.Fatal(err)
	}
	img, err := f.Image(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.AddBatch(ctx, second); err != nil {
		t.Fatal(err)
	}
	if img.Items() != 3000 {
		t.Fatalf("image Items = %d, want 3000", img.Items())
	}
	for _, k := range first {
		if ok, _ := img.MightContain(k); !ok {
			t.Fatalf("image lost %q", k)
		}
	}
	later := 0
	for _, k := range second {
		if ok, _ := img.MightContain(k); ok {
			later++
		}
	}
	if later > 300 {
		t.Fatalf("image answers maybe for %d of 3000 later keys: not a copy", later)
	}
	// An image rebuilt from the same words answers the same, and thawed
	// it accepts inserts again.
	again, err := NewImage(img.Params(), img.Items(), slices.Clone(img.Words()))
	if err != nil {
		t.Fatal(err)
	}
	if again.Stats().BitsSet != img.Stats().BitsSet {
		t.Fatalf("NewImage counts %d bits, image %d", again.Stats().BitsSet, img.Stats().BitsSet)
	}
	g, err := Thaw(again)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.AddBatch(ctx, second); err != nil {
		t.Fatal(err)
	}
	for _, k := range append(first, second...) {
		if ok, _ := g.MightContain(k); !ok {
			t.Fatalf("thawed filter lost %q", k)
		}
	}
	if _, err := Thaw(again); !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("second Thaw of one image: %v", err)
	}
	if _, err := NewImage(img.Params(), 0, make([]uint64, 3)); !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("NewImage with the wrong word count: %v", err)
	}
}

// TestConcurrentInsertsAreVisibleToEveryReader runs inserters and readers
// together (meant for -race). Each inserter publishes how many of its keys
// were acknowledged; a reader that observes count c must see the first c
// keys as maybe.
func TestConcurrentInsertsAreVisibleToEveryReader(t *testing.T) {
	const inserters, readers, perInserter = 4, 4, 4000
	f := newFilter(t, fixedParams(t, inserters*perInserter, 0.01))
	ctx := context.Background()
	keys := make([][]string, inserters)
	acked := make([]atomic.Int64, inserters)
	for i := range keys {
		keys[i] = idKeys(uint64(100+i), perInserter)
	}
	var wg sync.WaitGroup
	var failures atomic.Int64
	stop := make(chan struct{})
	for i := 0; i < inserters; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < perInserter; {
				if j%3 == 0 && j+50 <= perInserter { // mix single and batch inserts
					if err := f.AddBatch(ctx, keys[i][j:j+50]); err != nil {
						t.Error(err)
						return
					}
					j += 50
				} else {
					if err := f.Add(ctx, keys[i][j]); err != nil {
						t.Error(err)
						return
					}
					j++
				}
				acked[i].Store(int64(j))
			}
		}(i)
	}
	var rg sync.WaitGroup
	for r := 0; r < readers; r++ {
		rg.Add(1)
		go func(r int) {
			defer rg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := r % inserters
				c := acked[i].Load()
				for _, k := range keys[i][max(0, c-200):c] {
					if ok, err := f.MightContain(k); err != nil || !ok {
						failures.Add(1)
					}
				}
			}
		}(r)
	}
	wg.Wait()
	close(stop)
	rg.Wait()
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d acknowledged inserts were not visible to readers", n)
	}
	if got := f.Stats().Items; got != inserters*perInserter {
		t.Fatalf("Items = %d, want %d", got, inserters*perInserter)
	}
}

func TestQueriesDoNotAllocate(t *testing.T) {
	f := newFilter(t, fixedParams(t, 1000, 0.01))
	keys := idKeys(7, 64)
	dst := make([]bool, 0, len(keys))
	if a := testing.AllocsPerRun(100, func() { _, _ = f.MightContain(keys[0]) }); a != 0 {
		t.Errorf("MightContain allocates %v times", a)
	}
	if a := testing.AllocsPerRun(100, func() { dst, _ = f.MightContainBatch(dst[:0], keys) }); a != 0 {
		t.Errorf("MightContainBatch allocates %v times", a)
	}
}

func TestBuilderMatchesFilter(t *testing.T) {
	p := fixedParams(t, 20000, 0.01)
	keys := idKeys(9, 20000)
	f := newFilter(t, p)
	if err := f.AddBatch(context.Background(), keys); err != nil {
		t.Fatal(err)
	}
	want, err := f.Image(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBuilder(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddBatch([]string{"ok", "bad\xff"}); !errors.Is(err, normalize.ErrInvalidUTF8) {
		t.Fatalf("invalid key: %v", err)
	}
	if err := b.AddBatch(keys[:7000]); err != nil {
		t.Fatal(err)
	}
	if err := b.AddBatch(keys[7000:]); err != nil {
		t.Fatal(err)
	}
	got := b.Image()
	if !slices.Equal(got.Words(), want.Words()) || got.Items() != want.Items() || got.Stats().BitsSet != want.Stats().BitsSet {
		t.Fatalf("builder and filter disagree: items %d/%d bits %d/%d", got.Items(), want.Items(), got.Stats().BitsSet, want.Stats().BitsSet)
	}
	g, err := Thaw(got)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, k := range keys {
		if ok, _ := g.MightContain(k); !ok {
			t.Fatalf("built filter lost %q", k)
		}
	}
}

// TestImagesDuringInsertsAreConsistent takes images while one goroutine
// inserts keys in order: an image counting n items must hold all of the
// first n keys, so no image catches an insert half applied.
func TestImagesDuringInsertsAreConsistent(t *testing.T) {
	ctx := context.Background()
	f := newFilter(t, fixedParams(t, 50000, 0.01))
	keys := idKeys(13, 20000)
	done := make(chan error, 1)
	go func() {
		for i := 0; i < len(keys); i += 100 {
			if err := f.AddBatch(ctx, keys[i:i+100]); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	images := 0
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
		img, err := f.Image(ctx)
		if err != nil {
			t.Fatal(err)
		}
		images++
		n := img.Items()
		if n%100 != 0 {
			t.Fatalf("image holds %d items: a batch request was split", n)
		}
		got, _ := img.MightContainBatch(nil, keys[:n])
		for i, ok := range got {
			if !ok {
				t.Fatalf("image with %d items lacks key %d", n, i)
			}
		}
	}
	t.Logf("%d images taken during the inserts", images)
}

// waitExited is used by tests to observe that Close stopped the writer.
func (f *Filter) waitExited(ctx context.Context) error {
	select {
	case <-f.w.exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestSharedWriter: filters on one Writer each get exactly their own keys;
// closing one leaves the others working; closing the Writer makes every
// insert fail with ErrClosed while queries keep working.
func TestSharedWriter(t *testing.T) {
	ctx := context.Background()
	w := NewWriter()
	p, err := NewParams(10_000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewOn(w, p)
	if err != nil {
		t.Fatal(err)
	}
	img, err := a.Image(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ThawOn(w, img) // empty, same hash key
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i, f := range []*Filter{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 2000 {
				if err := f.Add(ctx, fmt.Sprintf("f%d-%d", i, j)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i, f := range []*Filter{a, b} {
		for j := range 2000 {
			if ok, _ := f.MightContain(fmt.Sprintf("f%d-%d", i, j)); !ok {
				t.Fatalf("filter %d lost key %d", i, j)
			}
		}
		if items, _, _ := f.Load(); items != 2000 {
			t.Fatalf("filter %d counts %d items, want its own 2000", i, items)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Add(ctx, "x"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after the filter's Close: %v", err)
	}
	if err := b.Add(ctx, "still"); err != nil {
		t.Fatalf("another filter of the writer after one closed: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.AddBatch(ctx, []string{"y"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("AddBatch after the writer's Close: %v", err)
	}
	if ok, _ := b.MightContain("still"); !ok {
		t.Fatal("queries stopped working after the writer closed")
	}
	if _, err := NewOn(nil, p); !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("NewOn(nil): %v", err)
	}
}

// TestBatchMatchesSingle: a batch query answers each key as MightContain
// does, on a filter and its image, under both Compares, for batches that
// end inside, at and just past the chunks the batch path hashes together,
// of keys of many lengths (NFD spellings among them).
func TestBatchMatchesSingle(t *testing.T) {
	ctx := context.Background()
	for _, cmp := range []Compare{CompareCanonical, CompareBytes} {
		p := fixedParams(t, 300, 0.2) // a dense filter: maybes and absents both common
		p.Compare = cmp
		f := newFilter(t, p)
		r := rand.New(rand.NewPCG(3, uint64(cmp)))
		keys := make([]string, 2000)
		for i := range keys {
			keys[i] = strings.Repeat("x", r.IntN(70)) + strconv.Itoa(i)
			if i%7 == 0 {
				keys[i] += "e\u0301" // NFD: one key with its NFC spelling under CompareCanonical
			}
		}
		if err := f.AddBatch(ctx, keys[:300]); err != nil {
			t.Fatal(err)
		}
		img, err := f.Image(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		for _, n := range []int{0, 1, 7, 31, 32, 33, 65, 1000} {
			page := keys[:n]
			fb, err := f.MightContainBatch(nil, page)
			if err != nil {
				t.Fatal(err)
			}
			ib, err := img.MightContainBatch(nil, page)
			if err != nil {
				t.Fatal(err)
			}
			if len(fb) != n || len(ib) != n {
				t.Fatalf("compare %v, %d keys: %d and %d answers", cmp, n, len(fb), len(ib))
			}
			for i, k := range page {
				one, _ := f.MightContain(k)
				if fb[i] != one || ib[i] != one {
					t.Fatalf("compare %v, %d keys: key %d %q: batch %v, image batch %v, single %v", cmp, n, i, k, fb[i], ib[i], one)
				}
			}
		}
	}
}
