package rebuild

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestIdleDatabaseRunsNothing: once the app stops calling, the follower
// ends after its window and nothing of the library runs: its only
// goroutine left is the filters' writer, blocked on its queue (no timer,
// no polling), until the next call starts the follower again.
func TestIdleDatabaseRunsNothing(t *testing.T) {
	// Not parallel: takes every goroutine of the library in the process for this database's.
	ctx := context.Background()
	path := appDB(t, ids("seed", 500)...)
	before := map[string]bool{}
	for id := range libraryGoroutines() {
		before[id] = true
	}
	ix := open(t, appConfig(path))
	app := rawDB(t, path)
	for i := range 5 { // a short sync: the pauses set a short window
		insertIDs(t, app, ids("page"+string(rune('a'+i)), 10)...)
		if _, err := ix.Missing(ctx, ids("seed", 20)); err != nil {
			t.Fatal(err)
		}
	}
	following := ix.db.bg.Following
	if !following() {
		t.Fatal("the follower does not run right after calls")
	}
	deadline := time.Now().Add((5 * time.Second) + 10*time.Second)
	for following() {
		if time.Now().After(deadline) {
			t.Fatalf("the follower still runs %v after the last call", (5*time.Second)+10*time.Second)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// What of the library is left: goroutines with a frame in it, other
	// than those that were there before the test opened the database.
	time.Sleep(50 * time.Millisecond)
	var ours []string
	for id, g := range libraryGoroutines() {
		if !before[id] {
			ours = append(ours, g)
		}
	}
	if len(ours) != 1 || !strings.Contains(ours[0], "(*Writer)") || !strings.Contains(ours[0], "[chan receive") && !strings.Contains(ours[0], "[select") {
		t.Fatalf("an idle database keeps %d goroutines of the library (want the writer, blocked):\n%s", len(ours), strings.Join(ours, "\n\n"))
	}
	// The next call starts the follower again and sees the app's commits.
	insertIDs(t, app, ids("after", 5)...)
	expect(t, ix, set(ids("seed", 500), ids("after", 5)), append(ids("after", 5), "never"))
	if !following() {
		t.Fatal("a call after the idle time did not start the follower")
	}
}

// TestFollowerCatchesUpBetweenCalls: after a call, the app's commits are
// taken into the filter while the engine waits on the network, without a
// call: the next call finds the filter at the log's head (its probe reads
// no entry).
func TestFollowerCatchesUpBetweenCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 500)...)
	ix := open(t, appConfig(path))
	app := rawDB(t, path)
	if _, err := ix.Missing(ctx, ids("seed", 20)); err != nil { // the call that starts the window
		t.Fatal(err)
	}
	before := stats(ix)
	insertIDs(t, app, ids("page", 200)...) // the page's records, stored after the call
	deadline := time.Now().Add(callBound)
	for stats(ix).CaughtUp < before.CaughtUp+200 {
		if time.Now().After(deadline) {
			st := stats(ix)
			t.Fatalf("without a call, the filter took %d of the 200 entries logged", st.CaughtUp-before.CaughtUp)
		}
		time.Sleep(time.Millisecond)
	}
	if st := stats(ix); st.Queries != before.Queries {
		t.Fatalf("%d keys asked meanwhile: the catch-up was a call's", st.Queries-before.Queries)
	}
	// The next call's answers rest on the filter, current: the 200 new
	// ids are maybes confirmed, the never-stored ones ruled out.
	missing, err := missingList(ctx, ix, append(ids("page", 200), ids("never", 50)...))
	if err != nil || !slices.Equal(missing, ids("never", 50)) {
		t.Fatalf("Missing = %d ids (%v), want the 50 never stored", len(missing), err)
	}
	if st := stats(ix); st.BypassLookups != before.BypassLookups {
		t.Fatalf("%d keys answered without the filter: it was behind", st.BypassLookups-before.BypassLookups)
	}
}

// libraryGoroutines returns the stacks of the goroutines with a frame in
// the library (not the tests'), by goroutine id.
func libraryGoroutines() map[string]string {
	buf := make([]byte, 1<<22)
	dump := string(buf[:runtime.Stack(buf, true)])
	out := map[string]string{}
	for _, g := range strings.Split(dump, "\n\n") {
		if !strings.Contains(g, "github.com/syncfilter/syncfilter/") || strings.Contains(g, "testing.tRunner") || strings.Contains(g, "_test.go") {
			continue
		}
		id, _, _ := strings.Cut(strings.TrimPrefix(g, "goroutine "), " ")
		out[id] = g
	}
	return out
}

// TestFollowerEndsAfterASuspendThatGaveUp: a Suspend whose ctx ends while
// the follower is inside a catch-up cancels that follower; after Resume
// it ends at its next turn (the next call starts a new one), instead of
// turning on its cancelled ctx for as long as the app keeps calling; and
// calls stay exact, with the new follower catching up.
func TestFollowerEndsAfterASuspendThatGaveUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 500)...)
	cfg, block, entered, release := blockCatchUp(appConfig(path))
	var polls atomic.Int64
	cfg.knobs.followPoll = func() { polls.Add(1) }
	ix := open(t, cfg)
	app := rawDB(t, path)
	if _, err := ix.Missing(ctx, ids("seed", 20)); err != nil {
		t.Fatal(err)
	}
	block.Store(true)
	insertIDs(t, app, ids("page", 200)...)
	select {
	case <-entered:
	case <-time.After(callBound):
		t.Fatal("the follower never caught up")
	}
	sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	err := ix.db.Suspend(sctx)
	cancel()
	if err == nil {
		t.Fatal("Suspend returned nil while the follower was parked in a catch-up")
	}
	ix.db.Resume()
	polls.Store(0)
	block.Store(false)
	close(release)
	// The app goes on syncing: a page stored, a call, a pause; 20 times.
	for i := range 20 {
		page := ids(fmt.Sprintf("more%02d", i), 5)
		insertIDs(t, app, page...)
		missing, err := ix.Missing(ctx, append(page, "never-"+page[0]))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(missing, []bool{false, false, false, false, false, true}) {
			t.Fatalf("page %d: missing %v", i, missing)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A follower polls at most every millisecond: a few hundred turns in
	// these 20 pauses. One turning on a cancelled ctx makes millions.
	if n := polls.Load(); n > 5000 {
		t.Fatalf("the follower turned %d times in 20 pauses of 10 ms", n)
	}
}

// TestACallOutlivesTheFollowersCancel: a call waiting for the catch-up
// the follower leads is not failed by the follower's cancellation
// (Suspend): it catches up itself and answers exactly.
func TestACallOutlivesTheFollowersCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 500)...)
	cfg, block, entered, release := blockCatchUp(appConfig(path))
	ix := open(t, cfg)
	app := rawDB(t, path)
	if _, err := ix.Missing(ctx, ids("seed", 20)); err != nil {
		t.Fatal(err)
	}
	block.Store(true)
	page := ids("page", 200)
	insertIDs(t, app, page...)
	select {
	case <-entered: // the follower leads the catch-up, parked
	case <-time.After(callBound):
		t.Fatal("the follower never caught up")
	}
	type answer struct {
		missing []bool
		err     error
	}
	answered := make(chan answer, 1)
	go func() {
		// Keys outside ASCII: the call needs the spellings caught up too.
		m, err := ix.Missing(ctx, []string{page[7], "caf\u00e9-never", "na\u00efve-never"})
		answered <- answer{m, err}
	}()
	time.Sleep(30 * time.Millisecond) // the call waits for the follower's run
	suspended := make(chan error, 1)
	go func() { suspended <- ix.db.Suspend(ctx) }()
	time.Sleep(30 * time.Millisecond) // Suspend cancelled the follower
	block.Store(false)
	close(release)
	a := <-answered
	if a.err != nil || !slices.Equal(a.missing, []bool{false, true, true}) {
		t.Fatalf("a call during Suspend: %v, %v; want [false true true], nil", a.missing, a.err)
	}
	if err := <-suspended; err != nil {
		t.Fatal(err)
	}
	ix.db.Resume()
}
