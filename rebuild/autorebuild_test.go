package rebuild

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// dueWaiting reports whether a due filter's automatic rebuild waits for
// the spacing.
func dueWaiting(ix *Index) bool { return ix.k.DueWaiting() }

// growUntil inserts batches of n rows (insert: on the app's connection), and has
// the index take each in (Wait: the catch-up that checks whether the
// filter is due, and any rebuild that asked for), until done holds; it
// returns the ids inserted.
func growUntil(t *testing.T, ix *Index, insert func(ids []string), prefix string, n int, what string, done func(tstats) bool) []string {
	t.Helper()
	var all []string
	for b := 0; ; b++ {
		if done(stats(ix)) {
			return all
		}
		if b == 100 {
			t.Fatalf("%s: not after %d rows", what, len(all))
		}
		batch := ids(fmt.Sprintf("%s%03d", prefix, b), n)
		insert(batch)
		all = append(all, batch...)
		if err := ix.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAutoRebuildSpacingFollowsTheServingFilter: a filter that is due
// while the spacing of automatic rebuilds (RebuildEvery) delays its
// rebuild is remembered as due; when the app replaces that filter
// (Rebuild, or Reload of another writer's snapshot) meanwhile, the dropped
// filter is not kept alive and the new one is judged on its own fill, and
// when it is due in its turn, the first call once the spacing allows asks
// for its rebuild. The spacing's clock is the test's (a knob): no waiting
// for an hour, no timed assertion.
func TestAutoRebuildSpacingFollowsTheServingFilter(t *testing.T) {
	t.Parallel()
	for _, replace := range []string{"Rebuild", "Reload"} {
		t.Run(replace, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			seed := ids("seed", 1000)
			path := appDB(t, seed...)
			app := rawDB(t, path)
			var ahead atomic.Int64 // the spacing clock's lead on real time
			cfg := appConfig(path)
			cfg.Headroom = 1
			cfg.RebuildEvery = time.Hour
			cfg.knobs.noFollow = true
			cfg.knobs.now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
			ix := open(t, cfg)
			insert := func(ids []string) { insertIDs(t, app, ids...) }
			var rows []string

			// The first automatic rebuild starts at once: none before it
			// to space it from.
			rows = append(rows, growUntil(t, ix, insert, "a", 1000, "the first automatic rebuild", func(st tstats) bool { return st.AutoRebuilds == 1 })...)
			if dueWaiting(ix) {
				t.Fatal("the first automatic rebuild waited for the spacing")
			}
			// The next due filter waits for the spacing.
			rows = append(rows, growUntil(t, ix, insert, "b", 2000, "a due filter waiting", func(tstats) bool { return dueWaiting(ix) })...)
			st := stats(ix)
			if st.AutoRebuilds != 1 || !st.RebuildDue {
				t.Fatalf("due and waiting: %d automatic rebuilds, due %v; want 1 and a due filter", st.AutoRebuilds, st.RebuildDue)
			}
			dropped := weak.Make(serving(ix))
			capacity := st.Capacity

			switch replace {
			case "Rebuild":
				if err := ix.Rebuild(ctx); err != nil {
					t.Fatal(err)
				}
			case "Reload":
				other := cfg
				other.knobs = knobs{}
				other.NoAutoRebuild = true
				cron := open(t, other)
				if err := cron.Rebuild(ctx); err != nil {
					t.Fatal(err)
				}
				if err := cron.Close(ctx); err != nil {
					t.Fatal(err)
				}
				if err := ix.k.Reload(ctx); err != nil {
					t.Fatal(err)
				}
			}
			st = stats(ix)
			if !st.Serving || st.RebuildDue || st.Capacity == capacity || st.AutoRebuilds != 1 {
				t.Fatalf("after %s: serving %v, due %v, capacity %d → %d, %d automatic rebuilds", replace, st.Serving, st.RebuildDue, capacity, st.Capacity, st.AutoRebuilds)
			}
			if dueWaiting(ix) {
				t.Fatal("the new filter taken for due with the one it replaced")
			}
			for i := 0; i < 10 && dropped.Value() != nil; i++ {
				runtime.GC()
			}
			if dropped.Value() != nil {
				t.Fatal("the dropped filter is still reachable")
			}

			// The new filter fills up; the spacing delays its rebuild too.
			rows = append(rows, growUntil(t, ix, insert, "c", 2000, "the new filter due", func(st tstats) bool { return st.RebuildDue })...)
			if st := stats(ix); st.AutoRebuilds != 1 {
				t.Fatalf("%d automatic rebuilds before the spacing allows one", st.AutoRebuilds)
			}
			// An hour later, the first call asks for its rebuild.
			rebuilds := stats(ix).Rebuilds
			ahead.Store(int64(2 * time.Hour))
			if _, err := ix.Missing(ctx, seed[:5]); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the new filter's automatic rebuild", func() bool {
				st := stats(ix)
				return st.AutoRebuilds == 2 && st.Rebuilds == rebuilds+1 && !st.Rebuilding
			})
			if err := ix.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			st = stats(ix)
			if !st.Serving || st.RebuildDue || !strings.Contains(st.AutoReason, "estimated false-positive rate") {
				t.Fatalf("after the spacing: serving %v, due %v, reason %q", st.Serving, st.RebuildDue, st.AutoReason)
			}
			judgePage(t, ix, storedCanon(t, path, "records"), slices.Concat(seed[:20], rows[:20], rows[len(rows)-20:], ids("never", 40)), true, "after the automatic rebuilds")
		})
	}
}

// TestGrowingCollectionStaysUseful: a collection that starts with 1,000
// rows and grows to 51,000 through pages of Missing and the app's INSERTs
// ends with an estimated false-positive rate within twice the target,
// without the app ever calling Rebuild; Stats says why it rebuilt.
func TestGrowingCollectionStaysUseful(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("start", 1000)...)
	cfg := appConfig(path)
	ix := open(t, cfg)
	app := rawDB(t, path)
	next := 0
	for total := 1000; total < 51_000; {
		page := ids(fmt.Sprintf("grow%05d", next), 500)
		next++
		missing, err := missingList(ctx, ix, page)
		if err != nil {
			t.Fatal(err)
		}
		insertIDs(t, app, missing...)
		total += len(missing)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		st := stats(ix)
		if st.Serving && !st.Rebuilding {
			if st.EstimatedFPR > 2*st.TargetFPR {
				// One more insert re-checks; a rebuild due may still start.
				if time.Now().After(deadline) {
					t.Fatalf("estimated rate %.4f > 2 × %.4f after %d automatic rebuilds", st.EstimatedFPR, st.TargetFPR, st.AutoRebuilds)
				}
			} else {
				if st.AutoRebuilds == 0 || !strings.Contains(st.AutoReason, "estimated false-positive rate") {
					t.Fatalf("no automatic rebuild reported: %d, %q", st.AutoRebuilds, st.AutoReason)
				}
				t.Logf("%d automatic rebuilds; rate %.4f; capacity %d; last: %s", st.AutoRebuilds, st.EstimatedFPR, st.Capacity, st.AutoReason)
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no filter serving")
		}
		time.Sleep(10 * time.Millisecond)
	}
	expect(t, ix, set(ids("start", 1000)), append(ids("start", 100), ids("never", 100)...))
}

func TestStatsRebuildDue(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "own.db")
	ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Capacity: 1024, FPR: 0.01, NotWhenDue: true}}) // the app watches RebuildDue
	ctx := context.Background()
	if st := stats(ix); st.RebuildDue || st.Capacity != 2048 && st.Capacity != 1024 {
		t.Fatalf("fresh index: %+v", st)
	}
	if err := ix.MarkFetched(ctx, ids("k", 20000)...); err != nil {
		t.Fatal(err)
	}
	if err := ix.Wait(ctx); err != nil { // the filter takes the log in
		t.Fatal(err)
	}
	st := stats(ix)
	if !st.RebuildDue || st.EstimatedFPR < 0.02 {
		t.Fatalf("overfilled index: RebuildDue %v, estimated rate %v", st.RebuildDue, st.EstimatedFPR)
	}
	if err := ix.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if st := stats(ix); st.RebuildDue || st.Capacity < 40000 || st.Rebuilds < 2 {
		t.Fatalf("after rebuild: %+v", st)
	}
}
