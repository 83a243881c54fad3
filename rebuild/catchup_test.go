package rebuild

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/internal/testexec"
)

// TestCatchUpNeverSkipsEntriesCompactedMeanwhile: another index compacts
// the log while this one's catch-up is between two chunks of it. The
// catch-up must not skip the entries deleted under it: every id
// committed before the call is fetched (by Missing and Fetched, in NFC
// and NFD), the filter is dropped and rebuilt.
func TestCatchUpNeverSkipsEntriesCompactedMeanwhile(t *testing.T) {
	t.Parallel()
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
	before := stats(ix)
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
	if st := stats(ix); st.Dropped != before.Dropped+1 || !st.Serving {
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
	t.Parallel()
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
	other = open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: path + ".other.sfb", LogRetain: 1, NoAutoRebuild: true}})
	later := make([]string, 0, 5000)
	for i := len(seed); i < len(seed)+5000; i++ {
		later = append(later, ref.id(i).stored)
	}
	insertInto(t, rawDB(t, path), "records", later...)
	ref.committed(len(seed), len(seed)+5000)
	return ref, ix, other
}

// TestAppWritesOnItsOwnConnection: an app stores records on its own
// connection, in its own transactions; committed ones are fetched at the
// next call, rolled-back ones are not, and MarkFetched is only for the
// library's own table.
func TestAppWritesOnItsOwnConnection(t *testing.T) {
	t.Parallel()
	path := appDB(t, ids("old", 300)...)
	ix := open(t, appConfig(path))
	ctx := context.Background()
	own := rawDB(t, path)
	added := ids("new", 200)
	insertIDs(t, own, added...)
	rolledBack := ids("rb", 50)
	tx, err := own.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range rolledBack {
		if _, err := tx.Exec(`INSERT INTO records (id, body) VALUES (?, 'z')`, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	probe := append(append(ids("old", 300), added...), append(rolledBack, ids("never", 300)...)...)
	expect(t, ix, set(ids("old", 300), added), probe)
	if err := ix.MarkFetched(ctx, "x"); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("MarkFetched on an app table: %v", err)
	}
}

// TestOtherConnectionWritesAreCaughtUp: rows inserted by plain SQL on
// another connection, with no call to the library, are reported fetched
// by the next query, and after a reopen from an older snapshot.
func TestOtherConnectionWritesAreCaughtUp(t *testing.T) {
	t.Parallel()
	path := appDB(t, ids("seed", 1000)...)
	cfg := appConfig(path)
	ix := open(t, cfg)
	ctx := context.Background()
	if err := ix.Save(ctx); err != nil {
		t.Fatal(err)
	}
	other := rawDB(t, path)
	late := ids("late", 700)
	insertIDs(t, other, late...)
	probe := append(append(ids("seed", 1000), late...), ids("never", 500)...)
	expect(t, ix, set(ids("seed", 1000), late), probe)
	if stats(ix).CaughtUp < 700 {
		t.Fatalf("caught up %d log entries, want >= 700", stats(ix).CaughtUp)
	}

	// Close saves; delete that save and put back an older snapshot, then
	// write more: the reopened index loads the old file and catches up.
	old, err := os.ReadFile(cfg.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.Snapshot, old, 0o600); err != nil {
		t.Fatal(err)
	}
	later := ids("later", 300)
	insertIDs(t, other, later...)
	again := open(t, cfg)
	if st := stats(again); !st.Serving || st.SnapshotError != nil {
		t.Fatalf("reopen did not serve from the snapshot: %+v", st)
	}
	expect(t, again, set(ids("seed", 1000), late, later), append(probe, later...))
}

// TestLongKeysInTheLog: rows whose keys add up to more than a value may
// hold on a reading connection (4 MiB: one key of 5 MiB, or 80 valid keys
// of 60 KiB in one commit) are caught up like any other: the probe leaves
// them to the log reader, which reads a long entry alone, and every call
// answers (none fails for the size of what it reads).
func TestLongKeysInTheLog(t *testing.T) {
	t.Parallel()
	path := appDB(t, ids("old", 100)...)
	ix := open(t, appConfig(path))
	waitServing(t, ix)
	app := rawDB(t, path)
	var long []string
	for i := range 80 {
		long = append(long, fmt.Sprintf("%02d-%s", i, strings.Repeat("L", 60<<10)))
	}
	insertIDs(t, app, "b-1", strings.Repeat("H", 5<<20), "c-1")
	insertIDs(t, app, long...)
	expect(t, ix, set([]string{"b-1", "c-1", "old-0000007"}, long), append([]string{"b-1", "c-1", "old-0000007", "x"}, long...))
}

const childEnv = "SYNCFILTER_REBUILD_CHILD_DB"

// TestChildProcessInserts is not a test: it is the second process of
// TestSecondProcessWritesAreSeen. It inserts ids with plain SQL.
func TestChildProcessInserts(t *testing.T) {
	t.Parallel()
	path := os.Getenv(childEnv)
	if path == "" {
		t.Skip("child process of TestSecondProcessWritesAreSeen")
	}
	db := rawDB(t, path)
	insertIDs(t, db, ids("child", 400)...)
}

func runChild(t *testing.T, path string) {
	t.Helper()
	cmd := testexec.Command(os.Args[0], "-test.run=^TestChildProcessInserts$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child process: %v\n%s", err, out)
	}
}

// TestSecondProcessWritesAreSeen: another process inserts rows while the
// index runs, and while it is closed; both are reported fetched.
func TestSecondProcessWritesAreSeen(t *testing.T) {
	t.Parallel()
	seed := ids("seed", 500)
	path := appDB(t, seed...)
	cfg := appConfig(path)
	ix := open(t, cfg)
	ctx := context.Background()
	probe := append(append(slices.Clone(seed), ids("child", 400)...), ids("never", 400)...)
	expect(t, ix, set(seed), probe)
	runChild(t, path) // while running
	expect(t, ix, set(seed, ids("child", 400)), probe)
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// While closed: the child writes again (same ids: OR IGNORE semantics
	// are not needed, use other ids).
	db := rawDB(t, path)
	mustExec(t, db, `DELETE FROM records WHERE id LIKE 'child-%'`)
	runChild(t, path)
	again := open(t, cfg)
	if st := stats(again); !st.Serving {
		t.Fatalf("reopen: %+v", st)
	}
	expect(t, again, set(seed, ids("child", 400)), probe)
}

const hammerEnv = "SYNCFILTER_REBUILD_HAMMER_DB"

// TestChildProcessHammers is not a test: it is the writing process of
// TestFreshnessUnderAHammeringWriter. It commits one id per transaction,
// in order, as fast as it can.
func TestChildProcessHammers(t *testing.T) {
	t.Parallel()
	path := os.Getenv(hammerEnv)
	if path == "" {
		t.Skip("child process of TestFreshnessUnderAHammeringWriter")
	}
	n, _ := strconv.Atoi(os.Getenv(hammerEnv + "_N"))
	db := rawDB(t, path)
	db.SetMaxOpenConns(1)
	for i := range n {
		mustExec(t, db, `INSERT INTO records (id) VALUES (?)`, fmt.Sprintf("hammer-%07d", i))
	}
}

// TestFreshnessUnderAHammeringWriter: while another process commits in a
// tight loop, every id committed before a call is reported fetched, by
// Fetched and by Missing.
func TestFreshnessUnderAHammeringWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 1000)...)
	ix := open(t, appConfig(path))
	const n = 3000
	wait := startChild(t, "TestChildProcessHammers", hammerEnv+"="+path, hammerEnv+"_N="+strconv.Itoa(n))
	done := make(chan error, 1)
	var out string
	go func() {
		var err error
		out, err = wait()
		done <- err
	}()
	reader := rawDB(t, path)
	checked, wrong := 0, 0
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("writer: %v\n%s", err, out)
			}
			running = false
		default:
		}
		var last sql.NullString
		if err := reader.QueryRow(`SELECT max(id) FROM records WHERE id LIKE 'hammer-%'`).Scan(&last); err != nil {
			t.Fatal(err)
		}
		if !last.Valid {
			continue
		}
		top, _ := strconv.Atoi(strings.TrimPrefix(last.String, "hammer-"))
		// Every id up to top was committed before the calls below began.
		ok, err := ix.Fetched(ctx, last.String)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			wrong++
		}
		var page []string
		for i := max(0, top-20); i <= top; i++ {
			page = append(page, fmt.Sprintf("hammer-%07d", i))
		}
		page = append(page, fmt.Sprintf("hammer-%07d", top+n)) // never written
		missing, err := missingList(ctx, ix, page)
		if err != nil {
			t.Fatal(err)
		}
		if len(missing) != 1 || missing[0] != page[len(page)-1] {
			wrong++
		}
		checked++
	}
	if wrong > 0 {
		t.Fatalf("%d of %d checks reported committed ids missing", wrong, checked)
	}
	if st := stats(ix); checked < 10 || st.CaughtUp == 0 {
		t.Fatalf("%d checks, %d log entries caught up: the test proves nothing", checked, st.CaughtUp)
	}
	t.Logf("%d checks", checked)
}

// TestSpellingsOfATailCompactedMeanwhile: a call whose filter stays
// behind the log reads the tail's stored spellings for a key that may be
// spelled otherwise; another index compacts the log past the filter
// between that call's probe and its read. The filter is dropped and the
// call answered from SQLite, exactly, not failed.
func TestSpellingsOfATailCompactedMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 100)...)
	var armed, compacted atomic.Bool
	var once sync.Once
	var other *Index
	ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver(), knobs: knobs{behind: true, noFollow: true,
		afterProbe: func() {
			if armed.Load() {
				once.Do(func() { // compact up to the head
					if err := other.Rebuild(ctx); err != nil {
						t.Error(err)
					}
					compacted.Store(true)
				})
			}
		}}},
		Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb"}})
	waitServing(t, ix)
	other = open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()},
		Source: Source{Table: "records", Column: "id", Snapshot: path + ".other.sfb", LogRetain: 1, NoAutoRebuild: true}})
	insertIDs(t, rawDB(t, path), slices.Concat([]string{"cafe\u0301-new"}, ids("later", 50))...)
	armed.Store(true)
	got, err := missingList(ctx, ix, []string{"café-new", "later-0000001", "naïve", "seed-0000002"})
	if err != nil || !slices.Equal(got, []string{"naïve"}) {
		t.Fatalf("missing %q, %v; want [naïve]", got, err)
	}
	if !compacted.Load() || stats(ix).Dropped == 0 {
		t.Fatalf("the log was not compacted past the filter during the call (dropped %d)", stats(ix).Dropped)
	}
}
