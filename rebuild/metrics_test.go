package rebuild

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"golang.org/x/text/unicode/norm"
)

// The counters' invariant. A key asked is a key handed to Fetched or
// Missing by a call that answered (a call that fails answers nothing and
// counts nothing); an invalid key of a page is asked too, as the Stats
// doc says: Queries counts it and it lands in InvalidKeys. Every key
// asked lands in exactly one of LookupsAvoided, ConfirmedPositives,
// FalsePositives, BypassLookups and InvalidKeys; when a filter answers
// the call (not behind the log, not in bypass), the valid keys land in
// the first three.

// counts are the counters of Stats the invariant is about.
type counts struct {
	queries, avoided, confirmed, refuted, bypass, invalid uint64
}

func countsOf(st tstats) counts {
	return counts{st.Queries, st.LookupsAvoided, st.ConfirmedPositives, st.FalsePositives, st.BypassLookups, st.InvalidKeys}
}

func (c counts) sum() uint64 { return c.avoided + c.confirmed + c.refuted + c.bypass + c.invalid }

func (c counts) minus(o counts) counts {
	return counts{c.queries - o.queries, c.avoided - o.avoided, c.confirmed - o.confirmed, c.refuted - o.refuted, c.bypass - o.bypass, c.invalid - o.invalid}
}

func (c counts) String() string {
	return fmt.Sprintf("queries %d = avoided %d + confirmed %d + refuted %d + bypass %d + invalid %d", c.queries, c.avoided, c.confirmed, c.refuted, c.bypass, c.invalid)
}

// counterWatch checks an index's counters after every step: the
// invariant holds, no counter went down (or wrapped: each stays at most
// Queries), and the step's keys landed where the path sends them.
type counterWatch struct {
	t    *testing.T
	ix   *Index
	last counts
}

func watchCounters(t *testing.T, ix *Index) *counterWatch {
	w := &counterWatch{t: t, ix: ix}
	w.last = w.check("at open")
	return w
}

// check checks the invariant and the monotony, and returns the counts.
func (w *counterWatch) check(what string) counts {
	w.t.Helper()
	c := countsOf(stats(w.ix))
	if c.sum() != c.queries {
		w.t.Fatalf("%s: %v: the sum is %d", what, c, c.sum())
	}
	prev := []uint64{w.last.queries, w.last.avoided, w.last.confirmed, w.last.refuted, w.last.bypass, w.last.invalid}
	for i, v := range []uint64{c.queries, c.avoided, c.confirmed, c.refuted, c.bypass, c.invalid} {
		if v < prev[i] || v > c.queries {
			w.t.Fatalf("%s: a counter went from %d to %d (queries %d): %v", what, prev[i], v, c.queries, c)
		}
	}
	return c
}

// step runs ask, which asks n keys of which bad are invalid, and checks
// where they landed: want says which of the counters the valid keys may
// land in ("filter": avoided, confirmed, refuted; "bypass"; "any").
// stored, if not negative, is how many of the valid keys are stored
// (with "filter", each is a confirmed positive). It returns the step's
// counts.
func (w *counterWatch) step(what string, n, bad, stored int, want string, ask func() error) counts {
	w.t.Helper()
	if err := ask(); err != nil {
		var ike *InvalidKeysError
		if !errors.As(err, &ike) || len(ike.Keys) != bad {
			w.t.Fatalf("%s: %v", what, err)
		}
	}
	c := w.check(what)
	d := c.minus(w.last)
	w.last = c
	valid := uint64(n - bad)
	switch {
	case d.queries != uint64(n) || d.sum() != uint64(n):
		w.t.Fatalf("%s: asked %d keys, the counters moved by %v", what, n, d)
	case d.invalid != uint64(bad):
		w.t.Fatalf("%s: %d invalid keys, InvalidKeys moved by %d", what, bad, d.invalid)
	case want == "filter" && d.avoided+d.confirmed+d.refuted != valid:
		w.t.Fatalf("%s: a filter answered, yet %v", what, d)
	case want == "filter" && stored >= 0 && d.confirmed != uint64(stored):
		w.t.Fatalf("%s: %d stored keys asked, %v", what, stored, d)
	case want == "bypass" && d.bypass != valid:
		w.t.Fatalf("%s: no filter answered, yet %v", what, d)
	}
	return d
}

// ruledOut returns n never-stored keys (prefix-...) the serving filter
// rules out.
func ruledOut(t *testing.T, ix *Index, prefix string, n int) []string {
	t.Helper()
	s := serving(ix)
	if s == nil {
		t.Fatal("no filter serving")
	}
	var out []string
	for i := 0; len(out) < n; i++ {
		k := fmt.Sprintf("%s-%07d", prefix, i)
		if maybe, err := s.F.MightContain(k); err != nil {
			t.Fatal(err)
		} else if !maybe {
			out = append(out, k)
		}
	}
	return out
}

// TestCountersAddUpOnEveryPath: on every public path, the keys asked
// land in the counters once each (avoided + confirmed + refuted + bypass
// + invalid = Queries, the valid keys of a call a filter answered in the
// first three, of one no filter answered in bypass), and no counter ever
// goes down or wraps: keys the filter rules out, a filter's maybes confirmed and refuted, stored spellings learned by the call's
// own catch-up, invalid keys in a page, Fetched, a failed call, bypass
// during a rebuild, a read-only index without a filter, a filter left
// behind the log, and many calls at once beside the app's writes.
func TestCountersAddUpOnEveryPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 2000)
	nfd := make([]string, 30)
	for i := range nfd {
		nfd[i] = norm.NFD.String(fmt.Sprintf("café-%03d", i))
	}
	path := appDB(t, slices.Concat(seed, nfd[:10])...)
	app := rawDB(t, path)
	cfg, hk := hooked(appConfig(path))
	cfg.knobs.noFollow = true // the calls catch up themselves
	ix := open(t, cfg)
	w := watchCounters(t, ix)
	long := strings.Repeat("x", MaxKeyBytes+1)

	out := ruledOut(t, ix, "out", 100)
	for range 2 {
		d := w.step("ruled out", len(out), 0, 0, "filter", func() error { _, err := ix.Missing(ctx, out); return err })
		if d.avoided != uint64(len(out)) {
			t.Fatalf("not ruled out by the filter alone: %v", d)
		}
	}

	page := slices.Concat(seed[:100], seed[:20], ids("never", 200), []string{norm.NFC.String(nfd[0]), nfd[1]})
	w.step("stored and never-stored", len(page), 0, 122, "filter", func() error { _, err := ix.Missing(ctx, page); return err })

	// Stored in NFD after open: the call catches the filter up and
	// learns their spellings, then confirms again with them.
	insertIDs(t, app, nfd[10:20]...)
	var nfc []string
	for _, k := range nfd[10:20] {
		nfc = append(nfc, norm.NFC.String(k))
	}
	page = slices.Concat(nfc, out[:20], seed[:10])
	w.step("spellings learned by the call", len(page), 0, 20, "filter", func() error { _, err := ix.Missing(ctx, page); return err })

	page = slices.Concat([]string{"bad\xff", seed[0], long, "never-x", "\xc3", seed[0]}, out[:5])
	w.step("invalid keys in a page", len(page), 3, 2, "filter", func() error { _, err := ix.Missing(ctx, page); return err })
	// Fetched of a key with one spelling is one lookup, without the
	// filter (no dearer than the probe its "absent" would need); one that
	// may have others is answered as a page.
	for _, k := range []string{seed[5], "never-y", out[0]} {
		w.step("Fetched "+k, 1, 0, -1, "bypass", func() error { _, err := ix.Fetched(ctx, k); return err })
	}
	w.step("Fetched "+nfc[0], 1, 0, -1, "filter", func() error { _, err := ix.Fetched(ctx, nfc[0]); return err })
	for _, k := range []string{"bad\xff", long} {
		w.step("Fetched of an invalid key", 1, 1, 0, "any", func() error {
			if _, err := ix.Fetched(ctx, k); err == nil {
				return errors.New("no error")
			}
			return nil
		})
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	w.step("a call that fails", 0, 0, 0, "any", func() error {
		if _, err := ix.Missing(cancelled, page); err == nil {
			return errors.New("Missing with a cancelled context answered")
		}
		return nil
	})

	// Bypass while a rebuild scans.
	entered, release := scanGate(t, hk)
	done := make(chan error, 1)
	go func() { done <- ix.Rebuild(ctx) }()
	waitClosed(t, entered, "the rebuild's scan")
	page = slices.Concat(seed[:50], ids("never", 50), nfc, []string{"bad\xff"})
	w.step("bypass during a rebuild", len(page), 1, -1, "bypass", func() error { _, err := ix.Missing(ctx, page); return err })
	w.step("Fetched in bypass", 1, 0, -1, "bypass", func() error { _, err := ix.Fetched(ctx, seed[3]); return err })
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	hk.scanRow.Store(nil)
	w.step("after the rebuild", len(page), 1, 50+len(nfc), "filter", func() error { _, err := ix.Missing(ctx, page); return err })

	// Many calls at once, beside the app's writes.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	asked := 0
	for g := range 4 {
		p := slices.Concat(seed[g*10:g*10+30], ids(fmt.Sprintf("never%d", g), 30), nfc, []string{"bad\xff"})
		asked += 20 * (len(p) + 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if _, err := ix.Missing(ctx, p); err != nil && !errors.As(err, new(*InvalidKeysError)) {
					errs <- err
					return
				}
				if _, err := ix.Fetched(ctx, p[0]); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range 20 {
		insertIDs(t, app, ids(fmt.Sprintf("late%02d", i), 20)...)
	}
	insertIDs(t, app, nfd[20:]...)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	w.step("concurrent calls", asked, 4*20, -1, "any", func() error { return nil })

	t.Run("read-only, no filter", func(t *testing.T) {
		ro := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver(), ReadOnly: true}, Source: Source{Table: "records", Column: "id"}})
		if stats(ro).Serving {
			t.Fatal("serving without a snapshot")
		}
		w := watchCounters(t, ro)
		page := slices.Concat(seed[:30], ids("never", 30), nfc, []string{long})
		w.step("read-only", len(page), 1, -1, "bypass", func() error { _, err := ro.Missing(ctx, page); return err })
		w.step("read-only Fetched", 1, 0, -1, "bypass", func() error { _, err := ro.Fetched(ctx, nfc[2]); return err })
	})

	for _, k := range []string{"behind", "inline"} {
		t.Run("filter behind the log, "+k, func(t *testing.T) {
			path := appDB(t, seed...)
			cfg := appConfig(path)
			cfg.knobs = knobs{noFollow: true, behind: k == "behind", inline: k == "inline"}
			ix := open(t, cfg)
			w := watchCounters(t, ix)
			out := ruledOut(t, ix, "out", 50)
			insertIDs(t, rawDB(t, path), slices.Concat(ids("tail", 100), nfd)...)
			page := slices.Concat(out, ids("tail", 100)[:50], seed[:50], nfc, []string{"bad\xff"})
			want := "filter"
			if k == "behind" {
				want = "any"
			}
			d := w.step(k, len(page), 1, -1, want, func() error { _, err := ix.Missing(ctx, page); return err })
			if k == "behind" && d.bypass == 0 {
				t.Fatalf("behind the log, no key answered by SQLite alone: %v", d)
			}
			if want == "filter" {
				want = "bypass" // Fetched of a key with one spelling: one lookup, without the filter
			}
			w.step(k+", Fetched", 1, 0, -1, want, func() error { _, err := ix.Fetched(ctx, "tail-0000099"); return err })
		})
	}
}
