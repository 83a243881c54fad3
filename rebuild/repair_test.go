package rebuild

// A repair (the triggers gone with the app's table, and the like) waits
// for the end of the next call: every answer meanwhile exact, nothing
// written, Wait and Close as with any job.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// followWindow is the follower's window after a call in these tests:
// long enough on a slow machine (an emulated one in make cross) for it to
// see the migration that follows the call.
const followWindow = 3 * time.Second

// openTwo opens the collections of tables a and b of path on one DB,
// the follower's window followWindow.
func openTwo(t *testing.T, path string) (*DB, *Index, *Index) {
	t.Helper()
	ctx := context.Background()
	db, err := OpenDB(ctx, DBConfig{Path: path, Driver: testdriver.Driver(), knobs: knobs{followMin: followWindow}})
	if err != nil {
		t.Fatal(err)
	}
	var ix [2]*Index
	for i, table := range []string{"a", "b"} {
		if ix[i], err = db.Index(ctx, Source{Table: table, Column: "id", Snapshot: path + "." + table + ".sfb"}); err != nil {
			t.Fatal(err)
		}
	}
	return db, ix[0], ix[1]
}

// repairConfig is appConfig with the follower's window followWindow.
func repairConfig(path string) config {
	cfg := appConfig(path)
	cfg.knobs.followMin = followWindow
	return cfg
}

func migrateAndDefer(t *testing.T, ix *Index, path string, probe []string, stmts []string) {
	t.Helper()
	app := modeConn(t, path, "WAL")
	defer app.Close()
	exact(t, ix, tableIDs(t, path, "records"), probe)
	for _, q := range stmts {
		mustExec(t, app, q)
	}
	deadline := time.Now().Add(10 * time.Second)
	for stats(ix).Serving || !strings.Contains(stats(ix).Upkeep, "rebuild") {
		if time.Now().After(deadline) {
			t.Fatalf("not deferred 10 s after the migration: %+v", stats(ix).Stats)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := len(triggersOn(t, path, "records")); n > 1 {
		t.Fatalf("triggers in place before any call: %d", n)
	}
}

// TestDeferredRepairAfterDetach: the app migrates, the follower defers the
// repair, the app then detaches the source (rebuild.Detach / ops.Detach)
// before its next call. The index must not attach the source again by
// itself (TestDetachUnderAnOpenIndex: "does not attach the source again by
// itself; a new open does").
func TestDeferredRepairAfterDetach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 200)
	probe := slices.Concat(seed, ids("never", 20))
	path := driftDB(t, "WAL", seed)
	ix := open(t, repairConfig(path))
	waitServing(t, ix)
	migrateAndDefer(t, ix, path, probe, migrations[0].stmts(nil))
	if err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "id"); err != nil {
		t.Fatalf("Detach in the deferred window: %v", err)
	}
	after := schema(t, path)
	t.Logf("upkeep after Detach: %q", stats(ix).Upkeep)
	exact(t, ix, tableIDs(t, path, "records"), probe)
	err := ix.Wait(ctx)
	t.Logf("Wait after detach + call = %v", err)
	st := stats(ix)
	t.Logf("stats: serving %v attached %v upkeep %q reattached %d lastErr %v", st.Serving, st.Attached, st.Upkeep, st.Reattached, st.LastError)
	if !bytes.Equal(schema(t, path), after) {
		t.Errorf("the index attached the detached source again by itself: triggers now %d", len(triggersOn(t, path, "records")))
	}
	if st.Serving || st.Attached {
		t.Errorf("after the detach: serving %v, attached %v", st.Serving, st.Attached)
	}
}

// TestDeferredRepairWrites: INSERT / DELETE / UPDATE of the key
// between the migration and the first call, and while the repair runs
// after it; every answer exact.
func TestDeferredRepairWrites(t *testing.T) {
	t.Parallel()
	for _, m := range []int{0, 2, 3, 5} {
		t.Run(migrations[m].name, func(t *testing.T) {
			seed := ids("seed", 2000)
			probe := slices.Concat(seed[:300], ids("never", 50), ids("win", 50), ids("run", 50), ids("upd", 20))
			path := driftDB(t, "WAL", seed)
			ix := open(t, repairConfig(path))
			waitServing(t, ix)
			var trig []string
			if m == 1 {
				trig = triggersOn(t, path, "records")
			}
			migrateAndDefer(t, ix, path, probe, migrations[m].stmts(trig))
			app := modeConn(t, path, "WAL")
			insertInto(t, app, "records", ids("win", 50)...)
			mustExec(t, app, `DELETE FROM records WHERE id IN ('seed-0000001','seed-0000002','win-0000003')`)
			mustExec(t, app, `UPDATE records SET id = 'upd-0000000' WHERE id = 'seed-0000004'`)
			mustExec(t, app, `UPDATE records SET id = 'upd-0000001' WHERE id = 'win-0000005'`)
			exact(t, ix, tableIDs(t, path, "records"), probe) // first call: SQLite, then the repair starts
			// While the repair runs: writes and calls interleaved.
			for i := 0; i < 50; i++ {
				insertInto(t, app, "records", ids("run", 50)[i])
				if i%7 == 0 {
					mustExec(t, app, `DELETE FROM records WHERE id = ?`, seed[10+i])
				}
				if i%11 == 0 {
					mustExec(t, app, `UPDATE records SET id = ? WHERE id = ?`, ids("upd", 20)[2+i/11], seed[100+i])
				}
				exact(t, ix, tableIDs(t, path, "records"), probe)
			}
			waitServing(t, ix)
			exact(t, ix, tableIDs(t, path, "records"), probe)
			mustExec(t, app, `DELETE FROM records WHERE id LIKE 'run-%'`)
			exact(t, ix, tableIDs(t, path, "records"), probe)
			if st := stats(ix); !st.Serving || !st.Attached {
				t.Fatalf("after the repair: %+v", st.Stats)
			}
		})
	}
}

// TestDeferredRepairSeveralMigrationsBeforeACall: four migrations in a row, some in
// another process, no call in between.
func TestDeferredRepairSeveralMigrationsBeforeACall(t *testing.T) {
	t.Parallel()
	seed := ids("seed", 100)
	probe := slices.Concat(seed, ids("never", 20), ids("late", 20), ids("late2", 20))
	path := driftDB(t, "WAL", seed)
	ix := open(t, repairConfig(path))
	waitServing(t, ix)
	migrateAndDefer(t, ix, path, probe, migrations[0].stmts(nil))
	execIn(t, path, "WAL", migrations[2].stmts(nil)...)
	time.Sleep(50 * time.Millisecond)
	execIn(t, path, "WAL", migrations[3].stmts(nil)...)
	insertIn(t, path, "WAL", "records", "late", 10)
	execIn(t, path, "WAL", migrations[0].stmts(nil)...)
	t.Logf("upkeep before the call: %q", stats(ix).Upkeep)
	exact(t, ix, tableIDs(t, path, "records"), probe)
	waitOrDump(t, ix, 10*time.Second)
	waitServing(t, ix)
	exact(t, ix, tableIDs(t, path, "records"), probe)
	insertIn(t, path, "WAL", "records", "late2", 20)
	exact(t, ix, tableIDs(t, path, "records"), probe)
}

// TestDeferredRepairClose: Close with the repair deferred returns
// promptly, leaves nothing running, writes nothing; a reopened index's
// Wait returns.
func TestDeferredRepairClose(t *testing.T) { // not parallel: it counts the process's goroutines
	ctx := context.Background()
	seed := ids("seed", 100)
	probe := slices.Concat(seed, ids("never", 20))
	path := driftDB(t, "WAL", seed)
	cfg := repairConfig(path)
	ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	waitServing(t, ix)
	g0 := runtime.NumGoroutine()
	migrateAndDefer(t, ix, path, probe, migrations[0].stmts(nil))
	snap0, _ := os.Stat(cfg.Source.Snapshot)
	sch := schema(t, path)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := ix.Close(cctx); err != nil {
		t.Fatalf("Close with a deferred repair: %v", err)
	}
	t.Logf("Close took %v", time.Since(start))
	if u := ix.k.Upkeep(); u != "" {
		t.Errorf("Upkeep after Close = %q (pending count unbalanced?)", u)
	}
	if err := ix.Wait(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Wait after Close = %v", err)
	}
	if _, err := ix.Missing(ctx, probe[:3]); !errors.Is(err, ErrClosed) {
		t.Errorf("Missing after Close = %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	if g := runtime.NumGoroutine(); g > g0 {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Errorf("goroutines %d after Close, %d before the migration\n%s", g, g0, buf[:n])
	}
	if !bytes.Equal(schema(t, path), sch) {
		t.Error("the schema changed at Close")
	}
	if snap1, _ := os.Stat(cfg.Source.Snapshot); snap0 != nil && snap1 != nil && !snap1.ModTime().Equal(snap0.ModTime()) {
		t.Error("the snapshot was written at Close")
	}
	again := open(t, cfg)
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	if err := again.Wait(wctx); err != nil {
		t.Fatalf("Wait on the reopened index: %v", err)
	}
	exact(t, again, tableIDs(t, path, "records"), probe)
	if st := stats(again); !st.Serving {
		t.Fatalf("reopened: %+v", st.Stats)
	}
}

// waitOrDump is Wait bounded by d, dumping the state and goroutines when
// it does not return.
func waitOrDump(t *testing.T, ix *Index, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := ix.Wait(ctx); err != nil {
		st := stats(ix)
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Fatalf("Wait: %v\nstats %+v lastErr %v rebuilding %v\n%s", err, st.Stats, st.LastError, st.Rebuilding, buf[:n])
	}
}

// TestDeferredRepairWaitCancelledCtx: Wait with a cancelled context in the deferred
// window returns the context's error; does it start the repair (DDL)?
func TestDeferredRepairWaitCancelledCtx(t *testing.T) {
	t.Parallel()
	seed := ids("seed", 100)
	probe := slices.Concat(seed, ids("never", 20))
	path := driftDB(t, "WAL", seed)
	ix := open(t, repairConfig(path))
	waitServing(t, ix)
	migrateAndDefer(t, ix, path, probe, migrations[0].stmts(nil))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := ix.Wait(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Wait(cancelled) = %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	t.Logf("after Wait(cancelled): triggers %d, upkeep %q, serving %v", len(triggersOn(t, path, "records")), stats(ix).Upkeep, stats(ix).Serving)
	sctx, scancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer scancel()
	t.Logf("Wait(1ms) = %v", ix.Wait(sctx))
	exact(t, ix, tableIDs(t, path, "records"), probe)
	waitServing(t, ix)
	exact(t, ix, tableIDs(t, path, "records"), probe)
}

// TestDeferredRepairSuspend: Suspend in the deferred window, calls
// while suspended (exact, nothing attached), Resume, Wait.
func TestDeferredRepairSuspend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 100)
	probe := slices.Concat(seed, ids("never", 20), ids("s", 10))
	path := driftDB(t, "WAL", seed)
	cfg := repairConfig(path)
	db, err := OpenDB(ctx, cfg.DBConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	ix, err := db.Index(ctx, cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	waitServing(t, ix)
	migrateAndDefer(t, ix, path, probe, migrations[0].stmts(nil))
	if err := db.Suspend(ctx); err != nil {
		t.Fatal(err)
	}
	sch := schema(t, path)
	insertIn(t, path, "WAL", "records", "s", 5)
	exact(t, ix, tableIDs(t, path, "records"), probe)
	time.Sleep(300 * time.Millisecond)
	if !bytes.Equal(schema(t, path), sch) {
		t.Error("the schema changed while suspended (attach ran)")
	}
	wctx, wcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	t.Logf("Wait while suspended = %v; upkeep %q", ix.Wait(wctx), stats(ix).Upkeep)
	wcancel()
	db.Resume()
	waitOrDump(t, ix, 20*time.Second)
	exact(t, ix, tableIDs(t, path, "records"), probe)
	if !stats(ix).Serving {
		t.Fatal("not serving after Resume + Wait")
	}
}

// TestDeferredRepairTwoIndexesOneCalled: two collections of one DB, both tables
// migrated; only one is called. The other's repair stays deferred; its
// own calls, Wait, and the DB's Close behave.
func TestDeferredRepairTwoIndexesOneCalled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := modeDB(t, "WAL", []string{"a", "b"}, ids("seed", 100)...)
	db, ia, ib := openTwo(t, path)
	probe := slices.Concat(ids("seed", 100), ids("never", 10), ids("n", 10))
	exact(t, ia, tableIDs(t, path, "a"), probe)
	exact(t, ib, tableIDs(t, path, "b"), probe)
	waitServing(t, ia)
	waitServing(t, ib)
	exact(t, ia, tableIDs(t, path, "a"), probe)
	exact(t, ib, tableIDs(t, path, "b"), probe)
	app := modeConn(t, path, "WAL")
	for _, tb := range []string{"a", "b"} {
		for _, q := range []string{`BEGIN`, `CREATE TABLE ` + tb + `_new (id TEXT PRIMARY KEY, body TEXT, x INT)`, `INSERT INTO ` + tb + `_new (id, body) SELECT id, body FROM ` + tb,
			`DROP TABLE ` + tb, `ALTER TABLE ` + tb + `_new RENAME TO ` + tb, `COMMIT`} {
			mustExec(t, app, q)
		}
	}
	insertInto(t, app, "b", ids("n", 10)...)
	for range 3 {
		exact(t, ia, tableIDs(t, path, "a"), probe)
		time.Sleep(100 * time.Millisecond)
	}
	waitOrDump(t, ia, 20*time.Second)
	sa, sb := stats(ia), stats(ib)
	t.Logf("a: serving %v upkeep %q; b: serving %v attached %v upkeep %q lastErr %v", sa.Serving, sa.Upkeep, sb.Serving, sb.Attached, sb.Upkeep, sb.LastError)
	t.Logf("b triggers %d", len(triggersOn(t, path, "b")))
	exact(t, ib, tableIDs(t, path, "b"), probe)
	waitOrDump(t, ib, 20*time.Second)
	exact(t, ib, tableIDs(t, path, "b"), probe)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.Close(cctx); err != nil {
		t.Fatalf("DB Close: %v", err)
	}
}

// TestDeferredRepairTwoIndexesCloseDeferred: the uncalled index has a deferred
// repair when the DB closes.
func TestDeferredRepairTwoIndexesCloseDeferred(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := modeDB(t, "WAL", []string{"a", "b"}, ids("seed", 100)...)
	db, ia, ib := openTwo(t, path)
	probe := slices.Concat(ids("seed", 100), ids("never", 10))
	exact(t, ia, tableIDs(t, path, "a"), probe)
	exact(t, ib, tableIDs(t, path, "b"), probe)
	waitServing(t, ia)
	waitServing(t, ib)
	exact(t, ib, tableIDs(t, path, "b"), probe)
	execIn(t, path, "WAL", `DROP TRIGGER syncfilter_ins_2`)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stats(ib).Upkeep, "rebuild") {
		if time.Now().After(deadline) {
			t.Fatalf("b's repair not deferred 10 s after its trigger was dropped: upkeep %q, serving %v", stats(ib).Upkeep, stats(ib).Serving)
		}
		time.Sleep(5 * time.Millisecond)
	}
	exact(t, ia, tableIDs(t, path, "a"), probe)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.Close(cctx); err != nil {
		t.Fatalf("DB Close: %v", err)
	}
	if u := ib.Stats().Upkeep; u != "" {
		t.Errorf("b upkeep after DB Close %q", u)
	}
	if err := ib.Wait(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("b Wait after Close = %v", err)
	}
}

// TestDeferredRepairNeverCalledAgain: after the deferral the app makes no call: no
// schema change, no file written, no goroutine of the library busy.
func TestDeferredRepairNeverCalledAgain(t *testing.T) {
	t.Parallel()
	seed := ids("seed", 100)
	probe := slices.Concat(seed, ids("never", 20))
	path := driftDB(t, "WAL", seed)
	cfg := repairConfig(path)
	ix := open(t, cfg)
	waitServing(t, ix)
	migrateAndDefer(t, ix, path, probe, migrations[0].stmts(nil))
	files := func() map[string]string {
		out := map[string]string{}
		ents, _ := os.ReadDir(strings.TrimSuffix(path, "/app.db"))
		for _, e := range ents {
			fi, _ := e.Info()
			out[e.Name()] = fi.ModTime().String()
		}
		return out
	}
	sch, f0 := schema(t, path), files()
	time.Sleep(followWindow + time.Second) // past the follower's window
	if !bytes.Equal(schema(t, path), sch) {
		t.Error("schema changed with no call")
	}
	f1 := files()
	for n, m := range f0 {
		if n == "app.db-shm" || n == "app.db-wal" {
			continue
		}
		if f1[n] != m {
			t.Errorf("%s changed with no call", n)
		}
	}
	if s := ix.db.bg.Stats(); s.Job != "" {
		t.Errorf("background job with no call: %+v", s)
	}
	t.Logf("upkeep %q db stats %+v", stats(ix).Upkeep, ix.db.bg.Stats())
}

// TestDeferredRepairNoAutoRebuild: NoAutoRebuild: no deferral, exact answers, Wait
// says not serving, Rebuild mends.
func TestDeferredRepairNoAutoRebuild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 100)
	probe := slices.Concat(seed, ids("never", 20), ids("x", 5))
	path := driftDB(t, "WAL", seed)
	cfg := repairConfig(path)
	cfg.Source.NoAutoRebuild = true
	ix := open(t, cfg)
	if err := ix.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	exact(t, ix, tableIDs(t, path, "records"), probe)
	execIn(t, path, "WAL", migrations[0].stmts(nil)...)
	insertIn(t, path, "WAL", "records", "x", 5)
	exact(t, ix, tableIDs(t, path, "records"), probe)
	time.Sleep(100 * time.Millisecond)
	st := stats(ix)
	t.Logf("serving %v attached %v upkeep %q lastErr %v", st.Serving, st.Attached, st.Upkeep, st.LastError)
	if st.Upkeep != "" || len(triggersOn(t, path, "records")) != 0 {
		t.Errorf("NoAutoRebuild: upkeep %q triggers %d", st.Upkeep, len(triggersOn(t, path, "records")))
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := ix.Wait(wctx); !errors.Is(err, ErrNotServing) {
		t.Errorf("Wait = %v", err)
	}
	if err := ix.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	exact(t, ix, tableIDs(t, path, "records"), probe)
}

// TestDeferredRepairOpeningLoadThenMigration: the index opens with a snapshot (load
// deferred), the app migrates before the first call.
func TestDeferredRepairOpeningLoadThenMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 200)
	probe := slices.Concat(seed, ids("never", 20), ids("z", 5))
	path := driftDB(t, "WAL", seed)
	cfg := repairConfig(path)
	first := open(t, cfg)
	waitServing(t, first)
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close(ctx)
	t.Logf("upkeep after open: %q", stats(ix).Upkeep)
	execIn(t, path, "WAL", migrations[0].stmts(nil)...)
	insertIn(t, path, "WAL", "records", "z", 5)
	exact(t, ix, tableIDs(t, path, "records"), probe)
	waitOrDump(t, ix, 20*time.Second)
	exact(t, ix, tableIDs(t, path, "records"), probe)
	st := stats(ix)
	t.Logf("serving %v attached %v upkeep %q rebuilds %d", st.Serving, st.Attached, st.Upkeep, st.Rebuilds)
	if !st.Serving {
		t.Error("not serving after Wait")
	}
}

// TestDeferredRepairTwoCollectionsOpenWait: an app opens two collections of one
// database (no snapshot yet, first run) and Waits for the first, then the
// second, before its first sync. No migration at all.
func TestDeferredRepairTwoCollectionsOpenWait(t *testing.T) {
	t.Parallel()
	hung := 0
	for round := range 10 {
		ctx := context.Background()
		path := modeDB(t, "WAL", []string{"a", "b"}, ids("seed", 100)...)
		db, ia, ib := openTwo(t, path)
		for name, ix := range map[string]*Index{"a": ia, "b": ib} {
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := ix.Wait(wctx)
			cancel()
			if err != nil {
				hung++
				st := stats(ix)
				t.Logf("round %d: Wait(%s) = %v; serving %v attached %v upkeep %q rebuilds %d", round, name, err, st.Serving, st.Attached, st.Upkeep, st.Rebuilds)
			}
		}
		_ = db.Close(ctx)
	}
	if hung > 0 {
		t.Errorf("%d Waits hung", hung)
	}
}

// TestDeferredRepairWaitAfterACall: the app migrates, makes one call (the
// repair starts at its end), then Waits for the filter, as an app that
// wants the filter back before a sync does. Wait must return once the
// repair is done; afterwards no job is left asked.
func TestDeferredRepairWaitAfterACall(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"inproc", "child"} {
		t.Run(mode, func(t *testing.T) {
			hung, extra := 0, 0
			for round := range 15 {
				seed := ids("seed", 300)
				probe := slices.Concat(seed, ids("never", 20))
				path := driftDB(t, "WAL", seed)
				ix := open(t, repairConfig(path))
				waitServing(t, ix)
				exact(t, ix, tableIDs(t, path, "records"), probe)
				if mode == "child" {
					execIn(t, path, "WAL", migrations[0].stmts(nil)...)
				} else {
					app := modeConn(t, path, "WAL")
					for _, q := range migrations[0].stmts(nil) {
						mustExec(t, app, q)
					}
					app.Close()
				}
				exact(t, ix, tableIDs(t, path, "records"), probe)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := ix.Wait(ctx)
				cancel()
				st := stats(ix)
				if err != nil {
					hung++
					t.Logf("round %d: Wait = %v; serving %v attached %v upkeep %q rebuilds %d", round, err, st.Serving, st.Attached, st.Upkeep, st.Rebuilds)
				}
				if st.Upkeep != "" {
					extra++
					t.Logf("round %d: after Wait upkeep %q serving %v rebuilds %d", round, st.Upkeep, st.Serving, st.Rebuilds)
					r0 := st.Rebuilds
					exact(t, ix, tableIDs(t, path, "records"), probe)
					waitServing(t, ix)
					t.Logf("round %d: one more call: rebuilds %d -> %d", round, r0, stats(ix).Rebuilds)
				}
				_ = ix.Close(context.Background())
			}
			if hung+extra > 0 {
				t.Errorf("%d Waits hung, %d times a job was left asked after the repair", hung, extra)
			}
		})
	}
}

// TestDeferredRepairRebuildTakesIt: the app's Rebuild in the deferred
// window repairs what the deferred job waited for; the next call starts
// no second rebuild.
func TestDeferredRepairRebuildTakesIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 200)
	probe := slices.Concat(seed, ids("never", 20))
	path := driftDB(t, "WAL", seed)
	ix := open(t, repairConfig(path))
	waitServing(t, ix)
	migrateAndDefer(t, ix, path, probe, migrations[0].stmts(nil))
	before := stats(ix).Rebuilds
	if err := ix.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if st := stats(ix); st.Upkeep != "" || !st.Serving || st.Rebuilds != before+1 {
		t.Fatalf("after Rebuild: upkeep %q, serving %v, rebuilds %d → %d", st.Upkeep, st.Serving, before, st.Rebuilds)
	}
	exact(t, ix, tableIDs(t, path, "records"), probe)
	waitServing(t, ix)
	if st := stats(ix); st.Rebuilds != before+1 {
		t.Fatalf("the call after Rebuild started another: rebuilds %d → %d", before, st.Rebuilds)
	}
}

// TestDeferredRepairDetachThenWait: a Detach in the deferred window, then
// a Wait with no call between (the follower's window passed, so the gate
// has not seen the Detach): the repair does not attach the source again.
func TestDeferredRepairDetachThenWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 200)
	probe := slices.Concat(seed, ids("never", 20))
	path := driftDB(t, "WAL", seed)
	ix := open(t, repairConfig(path))
	waitServing(t, ix)
	migrateAndDefer(t, ix, path, probe, migrations[0].stmts(nil))
	for deadline := time.Now().Add(10 * time.Second); ix.db.bg.Following(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("follower still running")
		}
	}
	if err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "id"); err != nil {
		t.Fatalf("Detach: %v", err)
	}
	after := schema(t, path)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	err := ix.Wait(wctx)
	st := stats(ix)
	t.Logf("Wait = %v; serving %v attached %v upkeep %q", err, st.Serving, st.Attached, st.Upkeep)
	if !bytes.Equal(schema(t, path), after) || st.Attached {
		t.Errorf("Wait attached the detached source again: triggers %d attached %v", len(triggersOn(t, path, "records")), st.Attached)
	}
}

// TestDeferredRepairAfterAFailedRebuild: the app's Rebuild in the
// deferred window takes the repair's place and fails: the repair is asked
// again, and a filter serves after the next calls (as with the repair at
// once, whose failure is retried).
func TestDeferredRepairAfterAFailedRebuild(t *testing.T) {
	t.Parallel()
	for _, noDefer := range []bool{true, false} {
		t.Run(fmt.Sprintf("noDeferredRepair=%v", noDefer), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			seed := ids("seed", 200)
			probe := slices.Concat(seed, ids("never", 20))
			path := driftDB(t, "WAL", seed)
			cfg := repairConfig(path)
			var arm atomic.Bool
			cfg.DBConfig.knobs.scanRow = func(n int64) error {
				if arm.Load() {
					return errors.New("injected scan failure")
				}
				return nil
			}
			cfg.DBConfig.knobs.noDeferredRepair = noDefer
			ix := open(t, cfg)
			waitServing(t, ix)
			if noDefer {
				// The repair starts at once and fails (the scan is armed to fail); the app's Rebuild fails too.
				app := modeConn(t, path, "WAL")
				exact(t, ix, tableIDs(t, path, "records"), probe)
				arm.Store(true) // the background repair fails too, then is retried
				for _, q := range migrations[0].stmts(nil) {
					mustExec(t, app, q)
				}
				app.Close()
				time.Sleep(300 * time.Millisecond)
			} else {
				migrateAndDefer(t, ix, path, probe, migrations[0].stmts(nil))
				arm.Store(true)
			}
			err := ix.Rebuild(ctx)
			arm.Store(false)
			t.Logf("Rebuild = %v", err)
			for range 10 {
				exact(t, ix, tableIDs(t, path, "records"), probe)
				time.Sleep(200 * time.Millisecond)
			}
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			werr := ix.Wait(wctx)
			st := stats(ix)
			t.Logf("Wait = %v; serving %v attached %v upkeep %q", werr, st.Serving, st.Attached, st.Upkeep)
			if !st.Serving {
				t.Errorf("no filter serving after a failed app Rebuild and 10 calls: the repair was lost")
			}
		})
	}
}
