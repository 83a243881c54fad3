package rebuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"golang.org/x/text/unicode/norm"
)

const dropperEnv = "SYNCFILTER_REBUILD_DROPPER_DB"

// TestChildProcessCompactsOnce is not a test: it is the other process of
// TestDropsByAnotherProcessLeakNothing. It commits the ids [from, to) of
// the family "drop", then runs the cron job with LogRetain 1, which
// compacts the log up to what it saved.
func TestChildProcessCompactsOnce(t *testing.T) {
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
		before := ix.Stats()
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
		st := ix.Stats()
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

// TestSymlinkedPathWithAStaleShmStaysFresh: the app opens its database
// through a symbolic link, beside which lies a stale -shm file (left by
// an old process that opened the link's name). Rows another connection
// commits through the real path are seen by the next call, by Fetched
// and by Missing, in both spellings.
func TestSymlinkedPathWithAStaleShmStaysFresh(t *testing.T) {
	real := modeDB(t, "wal", []string{"records"}, ids("seed", 200)...)
	dir := t.TempDir()
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	stale := make([]byte, 32<<10)
	for i := range stale {
		stale[i] = byte(i * 7)
	}
	if err := os.WriteFile(link+"-shm", stale, 0o600); err != nil {
		t.Fatal(err)
	}
	ix := open(t, config{DBConfig: DBConfig{Path: link, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: filepath.Join(dir, "link.sfb")}})
	app := modeConn(t, real, "wal")
	fetched := set(ids("seed", 200))
	for round := range 4 {
		nfc := fmt.Sprintf("Ångström-link-%d", round)
		insertInto(t, app, "records", norm.NFD.String(nfc), fmt.Sprintf("plain-link-%d", round))
		fetched[nfc], fetched[norm.NFD.String(nfc)], fetched[fmt.Sprintf("plain-link-%d", round)] = true, true, true
		expect(t, ix, fetched, []string{nfc, fmt.Sprintf("plain-link-%d", round), norm.NFD.String(nfc), "seed-0000007", fmt.Sprintf("never-link-%d", round)})
	}
}

// TestWaitRightAfterADrop: another index in this process compacts the log
// past this one's filter; the next call answers exactly, the filter is
// dropped (by the follower, or by Wait's own catch-up), and Wait, called
// right after the call, returns nil once the rebuild the drop asked for
// is done: a filter serves again, no rebuild runs, no error is left.
func TestWaitRightAfterADrop(t *testing.T) {
	ctx := context.Background()
	path := appDB(t, ids("seed", 500)...)
	ix := open(t, appConfig(path))
	before := ix.Stats()
	compactPast(t, path)
	if ok, err := ix.Fetched(ctx, "compact-0000049"); err != nil || !ok {
		t.Fatalf("Fetched of a row the other index committed = %v, %v", ok, err)
	}
	if err := ix.Wait(ctx); err != nil {
		t.Fatalf("Wait right after the drop = %v", err)
	}
	st := ix.Stats()
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
