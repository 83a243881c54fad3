package rebuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

const dropperEnv = "SYNCFILTER_REBUILD_DROPPER_DB"

// TestChildProcessCompactsOnce is not a test: it is the other process of
// TestDropsByAnotherProcessLeakNothing. It commits the ids [from, to) of
// the family "drop", then runs the cron job with LogRetain 1, which
// compacts the log up to what it saved.
func TestChildProcessCompactsOnce(t *testing.T) {
	t.Parallel()
	path := os.Getenv(dropperEnv)
	if path == "" {
		t.Skip("child process of TestDropsByAnotherProcessLeakNothing")
	}
	var from, to int
	if _, err := fmt.Sscanf(os.Getenv(dropperEnv+"_RANGE"), "%d-%d", &from, &to); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	keys := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		keys = append(keys, idSpelling("drop", i).stored)
	}
	insertInto(t, db, "records", keys...)
	if _, err := BuildSnapshot(context.Background(), DBConfig{Path: path, Driver: testdriver.Driver()}, Source{Table: "records", Column: "id", Snapshot: path + ".cron.sfb", LogRetain: 1}); err != nil {
		t.Fatal(err)
	}
}

// TestDropsByAnotherProcessLeakNothing: another process compacts the log
// past this index's filter eight times. Each time the next call answers
// exactly (from SQLite), drops the filter and the worker rebuilds it;
// Wait, called right after the drop, waits for that rebuild and returns
// nil; Stats counts the drops; and after Close no goroutine remains of
// the eight filters dropped (the count before Open is reached again).
func TestDropsByAnotherProcessLeakNothing(t *testing.T) {
	// Not parallel: counts the process's goroutines.
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	ctx := context.Background()
	const seed, rounds, per = 1000, 8, 40
	ref := newReference("drop", seed+rounds*per)
	keys := make([]string, seed)
	for i := range keys {
		keys[i] = ref.id(i).stored
	}
	path := modeDB(t, "wal", []string{"records"}, keys...)
	ref.committed(0, seed)
	// The calls, not the follower between them, meet each compaction.
	cfg := config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver(), knobs: knobs{noFollow: true}}, Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb"}}
	warm := open(t, cfg) // the first attach and scan, outside the count
	if err := warm.Close(ctx); err != nil {
		t.Fatal(err)
	}
	baseline := baselineGoroutines()
	mon := newMonitor(t, callBound)
	ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		p := newProbe(ref, newRand(uint64(len(when))).IntN, 200)
		mon.do("Missing", func() {
			missing, err := ix.Missing(ctx, p.keys)
			if err != nil {
				t.Fatalf("%s: Missing: %v", when, err)
			}
			if errs := p.judgeMissing(missing); len(errs) > 0 {
				t.Fatalf("%s: %v", when, errors.Join(errs...))
			}
		})
		for j := range p.keys[:20] {
			mon.do("Fetched", func() {
				got, err := ix.Fetched(ctx, p.keys[j])
				if err != nil {
					t.Fatalf("%s: Fetched: %v", when, err)
				}
				if err := p.judgeFetched(j, got); err != nil {
					t.Fatalf("%s: %v", when, err)
				}
			})
		}
	}
	check("after open")
	for r := range rounds {
		from := seed + r*per
		wait := startChild(t, "TestChildProcessCompactsOnce", dropperEnv+"="+path, fmt.Sprintf("%s_RANGE=%d-%d", dropperEnv, from, from+per))
		if out, err := wait(); err != nil {
			t.Fatalf("compacting process: %v\n%s", err, out)
		}
		ref.committed(from, from+per)
		before := stats(ix)
		// The first call after the compaction is answered exactly (from
		// SQLite: the filter is behind the log's floor); the filter is
		// dropped by whatever reads the log first (a page's probe, the
		// follower, Wait), and Wait, right after the call, waits for the
		// rebuild the drop asked for.
		mon.do("the first call after the compaction", func() {
			id := ref.id(from + per - 1)
			if ok, err := ix.Fetched(ctx, id.forms[len(id.forms)-1]); err != nil || !ok {
				t.Fatalf("round %d: Fetched(%+q) of an id the other process committed = %v, %v", r, id.stored, ok, err)
			}
		})
		mon.do("Wait right after a drop", func() {
			if err := ix.Wait(ctx); err != nil {
				t.Fatalf("round %d: Wait right after the drop = %v, want nil once the rebuild it caused is done", r, err)
			}
		})
		st := stats(ix)
		switch {
		case st.Dropped != before.Dropped+1:
			t.Fatalf("round %d: Dropped %d → %d, want one drop", r, before.Dropped, st.Dropped)
		case st.Rebuilds != before.Rebuilds+1:
			t.Fatalf("round %d: Rebuilds %d → %d, want the drop followed by one rebuild", r, before.Rebuilds, st.Rebuilds)
		case !st.Serving || st.Rebuilding || st.LastError != nil:
			t.Fatalf("round %d: after Wait: serving %v, rebuilding %v, last error %v", r, st.Serving, st.Rebuilding, st.LastError)
		}
		check(fmt.Sprintf("round %d, after the rebuild", r))
	}
	mon.do("Close", func() {
		if err := ix.Close(ctx); err != nil {
			t.Fatal(err)
		}
	})
	mon.close()
	goroutinesBackTo(t, baseline)
}

// TestWaitRightAfterADrop: another index in this process compacts the log
// past this one's filter; the next call answers exactly, the filter is
// dropped (by the follower, or by Wait's own catch-up), and Wait, called
// right after the call, returns nil once the rebuild the drop asked for
// is done: a filter serves again, no rebuild runs, no error is left.
func TestWaitRightAfterADrop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 500)...)
	ix := open(t, appConfig(path))
	before := stats(ix)
	compactPast(t, path)
	if ok, err := ix.Fetched(ctx, "compact-0000049"); err != nil || !ok {
		t.Fatalf("Fetched of a row the other index committed = %v, %v", ok, err)
	}
	if err := ix.Wait(ctx); err != nil {
		t.Fatalf("Wait right after the drop = %v", err)
	}
	st := stats(ix)
	if st.Dropped != before.Dropped+1 || st.Rebuilds != before.Rebuilds+1 || !st.Serving || st.Rebuilding || st.LastError != nil {
		t.Fatalf("after Wait: dropped %d → %d, rebuilds %d → %d, serving %v, rebuilding %v, last error %v",
			before.Dropped, st.Dropped, before.Rebuilds, st.Rebuilds, st.Serving, st.Rebuilding, st.LastError)
	}
	expect(t, ix, set(ids("seed", 500), ids("compact", 50)), append(ids("compact", 50), ids("never", 10)...))
}

// compactPast makes ix's filter impossible to catch up: another index on
// the same database inserts rows, rebuilds and compacts the log past it.
func compactPast(t *testing.T, path string) {
	t.Helper()
	other := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: path + ".other.sfb", LogRetain: 1}})
	insertIDs(t, rawDB(t, path), ids("compact", 50)...)
	if err := other.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := other.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestCompactedLogForcesRebuild: one index compacts the log past another's
// generation (as a second process would); the other stops trusting its
// filter, answers from SQLite and rebuilds.
func TestCompactedLogForcesRebuild(t *testing.T) {
	t.Parallel()
	path := appDB(t, ids("seed", 100)...)
	a := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: path + ".a.sfb", LogRetain: 1}})
	b := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: path + ".b.sfb"}})
	db := rawDB(t, path)
	batch1, batch2 := ids("one", 300), ids("two", 300)
	insertIDs(t, db, batch1...)
	if err := a.Rebuild(context.Background()); err != nil { // compacts up to head-1
		t.Fatal(err)
	}
	insertIDs(t, db, batch2...)
	probe := append(append(append(ids("seed", 100), batch1...), batch2...), ids("never", 200)...)
	fetched := set(ids("seed", 100), batch1, batch2)
	expect(t, b, fetched, probe) // b's generation is below the floor now
	if err := stats(b).LastError; !errors.Is(err, ErrCannotCatchUp) && err != nil {
		t.Fatalf("LastError = %v", err)
	}
	waitServing(t, b)
	expect(t, b, fetched, probe)
	expect(t, a, fetched, probe)
}

const compactorEnv = "SYNCFILTER_REBUILD_COMPACTOR_DB"

// TestChildProcessCompacts is not a test: it is the second process of
// TestCompactionNeverBreaksAConcurrentRebuild. It inserts rows and
// rebuilds with LogRetain 1, compacting the log after every save.
func TestChildProcessCompacts(t *testing.T) {
	t.Parallel()
	path := os.Getenv(compactorEnv)
	if path == "" {
		t.Skip("child process of TestCompactionNeverBreaksAConcurrentRebuild")
	}
	rounds, _ := strconv.Atoi(os.Getenv(compactorEnv + "_ROUNDS"))
	ctx := context.Background()
	ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: path + ".child.sfb", LogRetain: 1, NoAutoRebuild: true}})
	db := rawDB(t, path)
	for r := range rounds {
		insertIDs(t, db, ids(fmt.Sprintf("child%d", r), 200)...)
		if err := ix.Rebuild(ctx); err != nil {
			t.Fatalf("child rebuild %d: %v", r, err)
		}
	}
}

// TestCompactionNeverBreaksAConcurrentRebuild: one process compacts the
// log aggressively while this one rebuilds in a loop (as the cron job
// does) and inserts between scans; no rebuild may fail.
func TestCompactionNeverBreaksAConcurrentRebuild(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	ctx := context.Background()
	path := appDB(t, ids("seed", 20000)...)
	cfg := appConfig(path)
	cfg.LogRetain = 1
	if _, err := BuildSnapshot(ctx, cfg.DBConfig, cfg.Source); err != nil {
		t.Fatal(err)
	}
	const rounds = 25
	wait := startChild(t, "TestChildProcessCompacts", compactorEnv+"="+path, compactorEnv+"_ROUNDS="+strconv.Itoa(rounds*2))
	db := rawDB(t, path)
	var failed []error
	for r := range rounds {
		insertIDs(t, db, ids(fmt.Sprintf("parent%d", r), 100)...)
		if _, err := BuildSnapshot(ctx, cfg.DBConfig, cfg.Source); err != nil {
			failed = append(failed, err)
		}
	}
	if out, err := wait(); err != nil {
		t.Fatalf("compacting process: %v\n%s", err, out)
	}
	if len(failed) > 0 {
		t.Fatalf("%d of %d rebuilds failed; first: %v", len(failed), rounds, failed[0])
	}
	var floor int64
	if err := db.QueryRow(`SELECT log_floor FROM syncfilter_sources`).Scan(&floor); err != nil || floor == 0 {
		t.Fatalf("the log was never compacted (floor %d, %v): the test proves nothing", floor, err)
	}
}

const compactLoopEnv = "SYNCFILTER_REBUILD_COMPACT_LOOP_DB"

// TestChildProcessCompactsInALoop is not a test: it is the compacting
// process of TestInterleavedCalls. Until the stop file appears it runs
// the cron job (BuildSnapshot, LogRetain 1: it compacts the log up to what
// it saved) on every table named, in turn.
func TestChildProcessCompactsInALoop(t *testing.T) {
	t.Parallel()
	path := os.Getenv(compactLoopEnv)
	if path == "" {
		t.Skip("child process of TestInterleavedCalls")
	}
	tables := strings.Split(os.Getenv(compactLoopEnv+"_TABLES"), ",")
	stop := os.Getenv(compactLoopEnv + "_STOP")
	parent := os.Getppid()
	ctx := context.Background()
	for round := 0; ; round++ {
		for _, tb := range tables {
			if _, err := os.Stat(stop); err == nil {
				fmt.Printf("compacted %d rounds\n", round)
				return
			}
			if os.Getppid() != parent { // the test died without stopping us
				return
			}
			if _, err := BuildSnapshot(ctx, DBConfig{Path: path, BusyTimeout: busy, Driver: testdriver.Driver()}, Source{Table: tb, Column: "id", Snapshot: path + "." + tb + ".cron.sfb", LogRetain: 1}); err != nil {
				t.Fatalf("round %d, %s: %v", round, tb, err)
			}
		}
	}
}
