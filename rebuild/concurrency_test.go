package rebuild

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"golang.org/x/text/unicode/norm"
)

// Settings of TestInterleavedCalls (make soak sets them longer).
const (
	interleaveTimeEnv = "SYNCFILTER_INTERLEAVE_TIME" // how long the calls run, a time.Duration; default 2s
	interleaveSeedEnv = "SYNCFILTER_INTERLEAVE_SEED" // the run's seed; default from the clock (logged)

	// busy is every connection's busy timeout: in a rollback-journal
	// mode SQLite's locks are not fair, and with three writers, a cron
	// job and four indexes a writer may wait seconds for its turn.
	busy = 30 * time.Second
)

// TestInterleavedCalls runs every public method at once, in a seeded
// random order: G goroutines call Missing, Fetched, Stats, DatasetID,
// Wait, Rebuild, Reload and Save on four indexes (three collections of
// one DB, OpenDB and DB.Index, and rebuild.Open on one of them again),
// DB.Sources, MarkFetched, Fetched and Missing on a fifth index of the
// same DB (the library's own table), DB.Suspend then DB.Resume on
// either database, DB.Path, Describe, Sources and BuildSnapshot (the
// cron job's) on the collections, and each goroutine DB.Index, Missing,
// Close and Detach on a table of its own; finally they Close everything
// while still calling.
// Meanwhile other connections commit NFC, NFD and KELVIN SIGN ids into
// every table, and a child process runs the cron job with LogRetain 1
// in a loop, compacting the logs past the filters. Every call returns
// within callBound (the watchdog), every answer is judged against what
// was committed before the call began (an id MarkFetched returned for is
// fetched, one never marked is missing), and after Close the goroutines
// are back to the count before the first open.
//
// SYNCFILTER_INTERLEAVE_SEED replays a run; SYNCFILTER_INTERLEAVE_TIME
// runs it longer (make soak).
func TestInterleavedCalls(t *testing.T) {
	// Not parallel: counts the process's goroutines.
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	runFor := 2 * time.Second
	if v := os.Getenv(interleaveTimeEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s: %v", interleaveTimeEnv, err)
		}
		runFor = d
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(interleaveSeedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", interleaveSeedEnv, err)
		}
		seed = n
	}
	t.Logf("seed %d (replay with %s=%d), running %v", seed, interleaveSeedEnv, seed, runFor)
	r := newRand(seed)
	mode := []string{"wal", "delete"}[r.IntN(2)]
	ctx := context.Background()

	tables := []string{"coll0", "coll1", "coll2"}
	const seedRows, capacity = 1500, 1 << 20
	const G = 6
	spares := make([]string, G) // one per caller: DB.Index, Close, Detach in a cycle
	for g := range spares {
		spares[g] = fmt.Sprintf("spare%d", g)
	}
	refs := map[string]*reference{}
	seedKeys := map[string][]string{}
	for _, tb := range tables {
		refs[tb] = newReference(tb, capacity)
		for i := range seedRows {
			seedKeys[tb] = append(seedKeys[tb], refs[tb].id(i).stored)
		}
	}
	path := filepath.Join(t.TempDir(), "app.db")
	{
		db := modeConn(t, path, mode)
		for _, tb := range tables {
			mustExec(t, db, `CREATE TABLE `+tb+` (id TEXT PRIMARY KEY, body TEXT)`)
			insertInto(t, db, tb, seedKeys[tb]...)
			refs[tb].committed(0, seedRows)
		}
		for _, tb := range spares {
			mustExec(t, db, `CREATE TABLE `+tb+` (id TEXT PRIMARY KEY, body TEXT)`)
			insertInto(t, db, tb, ids(tb, 200)...)
		}
		_ = db.Close()
	}
	// The first attach and scan of every table, outside the count.
	for _, tb := range tables {
		if _, err := BuildSnapshot(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, Source{Table: tb, Column: "id", Snapshot: path + "." + tb + ".sfb"}); err != nil {
			t.Fatal(err)
		}
	}
	// The app's other connections, one per table.
	conns := map[string]*sql.DB{}
	for _, tb := range tables {
		conns[tb] = modeConn(t, path, mode)
		conns[tb].SetMaxOpenConns(1)
	}

	check := modeConn(t, path, mode) // reads the logs' floors: has the child compacted?
	baseline := baselineGoroutines()
	mon := newMonitor(t, callBound)
	note := fmt.Sprintf("seed %d: replay with %s=%d", seed, interleaveSeedEnv, seed)
	mon.note.Store(&note)
	stopFile := filepath.Join(t.TempDir(), "stop")
	child := startChild(t, "TestChildProcessCompactsInALoop", compactLoopEnv+"="+path,
		compactLoopEnv+"_TABLES="+strings.Join(tables, ","), compactLoopEnv+"_STOP="+stopFile)
	childDone := make(chan error, 1)
	var childOut string
	go func() {
		out, err := child()
		childOut = out
		childDone <- err
	}()
	defer func() {
		if _, err := os.Stat(stopFile); err != nil {
			_ = os.WriteFile(stopFile, nil, 0o600)
			<-childDone
		}
	}()

	var progressCalls atomic.Int64
	progress := func(done, total int64) { progressCalls.Add(1) }
	type target struct {
		name string
		ix   *Index
		ref  *reference
	}
	var targets []target
	var db *DB
	var own *Index // the library's own table, of db: MarkFetched
	var marked atomic.Int64
	var err error
	mon.do("OpenDB and DB.Index", func() {
		if db, err = OpenDB(ctx, DBConfig{Path: path, Readers: 1 + r.IntN(2), BusyTimeout: busy, Driver: testdriver.Driver()}); err != nil {
			t.Fatal(err)
		}
		for _, tb := range tables {
			ix, err := db.Index(ctx, Source{Table: tb, Column: "id", Snapshot: path + "." + tb + ".sfb", ProgressEvery: 500, Progress: progress})
			if err != nil {
				t.Fatal(err)
			}
			targets = append(targets, target{"DB.Index(" + tb + ")", ix, refs[tb]})
		}
		if own, err = db.Index(ctx, Source{Snapshot: path + ".own.sfb"}); err != nil {
			t.Fatal(err)
		}
	})
	mon.do("Open", func() {
		tb := tables[r.IntN(len(tables))]
		ix, err := Open(ctx, DBConfig{Path: path, Readers: 1 + r.IntN(2), BusyTimeout: busy, Driver: testdriver.Driver()}, Source{Table: tb, Column: "id", Snapshot: path + "." + tb + ".open.sfb", ProgressEvery: 500, Progress: progress})
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, target{"Open(" + tb + ")", ix, refs[tb]})
	})

	var closing atomic.Bool // Close has begun: ErrClosed is a right answer from then on
	errs := make(chan error, 1024)
	fail := func(err error) {
		if closing.Load() {
			err = fmt.Errorf("%w (Close had begun)", err)
		}
		select {
		case errs <- err:
		default:
		}
	}
	stop := make(chan struct{})
	var writers sync.WaitGroup
	commits := make([]atomic.Int64, len(tables))
	for w, tb := range tables {
		writers.Add(1)
		go func() {
			defer writers.Done()
			ch := make(chan error, 1)
			inserter(conns[tb], tb, refs[tb], 1+w*2, 500*time.Microsecond, stop, &commits[w], ch)
			select {
			case err := <-ch:
				fail(err)
			default:
			}
		}()
	}

	okErr := func(err error, also ...error) bool {
		if err == nil || closing.Load() && errors.Is(err, ErrClosed) {
			return true
		}
		for _, a := range also {
			if errors.Is(err, a) {
				return true
			}
		}
		return false
	}
	dbs := []*DB{db, targets[len(targets)-1].ix.db} // OpenDB's, and Open's own
	var suspended atomic.Int64                      // Suspends that returned nil
	var callers sync.WaitGroup
	var calls [12]atomic.Int64
	names := [...]string{"Missing", "Fetched", "Stats", "Wait", "Rebuild", "Reload", "Save", "MarkFetched", "Suspend", "Describe", "BuildSnapshot", "Index-Close-Detach"}
	for g := range G {
		gr := newRand(seed + uint64(g) + 1)
		callers.Add(1)
		go func() {
			defer callers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				tg := targets[gr.IntN(len(targets))]
				ix, ref := tg.ix, tg.ref
				op := gr.IntN(106)
				switch {
				case op < 33:
					calls[0].Add(1)
					p := newProbe(ref, gr.IntN, 1+gr.IntN(300))
					mon.do(tg.name+".Missing", func() {
						missing, err := ix.Missing(ctx, p.keys)
						if err != nil {
							if !okErr(err) {
								fail(fmt.Errorf("%s.Missing: %w", tg.name, err))
							}
							return
						}
						for _, e := range p.judgeMissing(missing) {
							fail(fmt.Errorf("%s: %w", tg.name, e))
						}
					})
				case op < 61:
					calls[1].Add(1)
					p := newProbe(ref, gr.IntN, 4)
					for j := range p.keys {
						mon.do(tg.name+".Fetched", func() {
							got, err := ix.Fetched(ctx, p.keys[j])
							if err != nil {
								if !okErr(err) {
									fail(fmt.Errorf("%s.Fetched: %w", tg.name, err))
								}
								return
							}
							if e := p.judgeFetched(j, got); e != nil {
								fail(fmt.Errorf("%s: %w", tg.name, e))
							}
						})
					}
				case op < 68:
					calls[2].Add(1)
					mon.do(tg.name+".Stats", func() {
						if st := stats(ix); st.Serving && st.Rebuilding {
							fail(fmt.Errorf("%s.Stats: serving and rebuilding at once", tg.name))
						}
						if _, attached := datasetID(ix); !attached {
							fail(fmt.Errorf("%s.DatasetID: not attached", tg.name))
						}
					})
					mon.do("DB.Sources", func() {
						list, err := sources(ctx, ix.db)
						if !okErr(err) {
							fail(fmt.Errorf("%s: DB.Sources: %w", tg.name, err))
						} else if err == nil && len(list) < len(tables) {
							fail(fmt.Errorf("%s: DB.Sources lists %d sources, want at least %d", tg.name, len(list), len(tables)))
						}
					})
				case op < 73:
					calls[3].Add(1)
					// Drops keep coming while the child compacts: Wait may
					// find a new rebuild pending each time; bound it.
					wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
					mon.do(tg.name+".Wait", func() {
						if err := ix.Wait(wctx); !okErr(err, context.DeadlineExceeded) {
							fail(fmt.Errorf("%s.Wait: %w", tg.name, err))
						}
					})
					cancel()
				case op < 80:
					calls[4].Add(1)
					mon.do(tg.name+".Rebuild", func() {
						// The child may compact the log past the new filter
						// between its publication and its save (the scan's
						// lease ends before the save): a probe then drops it,
						// and the save finds no filter to save. A Suspend
						// interrupts it, or refuses it (ErrSuspended).
						if err := ix.Rebuild(ctx); !okErr(err, ErrNotServing, ErrSuspended) {
							fail(fmt.Errorf("%s.Rebuild: %w", tg.name, err))
						}
					})
				case op < 87:
					calls[5].Add(1)
					mon.do(tg.name+".Reload", func() {
						// Refusals are answers: the file may be missing,
						// behind the compacted log, or not vouched for.
						if err := ix.k.Reload(ctx); !okErr(err, os.ErrNotExist, ErrCannotCatchUp, ErrNotVouched, ErrSuspended) {
							fail(fmt.Errorf("%s.Reload: %w", tg.name, err))
						}
					})
				case op < 93:
					calls[6].Add(1)
					mon.do(tg.name+".Save", func() {
						if err := ix.Save(ctx); !okErr(err, ErrNotServing, ErrSuspended) {
							fail(fmt.Errorf("%s.Save: %w", tg.name, err))
						}
					})
				case op < 97:
					calls[7].Add(1)
					// An id MarkFetched returned for is fetched from then
					// on; one never marked is missing.
					key := fmt.Sprintf("own-%d-caf\u00e9", marked.Add(1))
					never := fmt.Sprintf("never-%d-%d", g, gr.IntN(1<<30))
					mon.do("own.MarkFetched", func() {
						if err := own.MarkFetched(ctx, key); err != nil {
							if !okErr(err) {
								fail(fmt.Errorf("own.MarkFetched: %w", err))
							}
							return
						}
						got, err := own.Fetched(ctx, norm.NFD.String(key))
						if err == nil && !got {
							fail(fmt.Errorf("own.Fetched(%+q) = false after MarkFetched", key))
						} else if !okErr(err) {
							fail(fmt.Errorf("own.Fetched: %w", err))
						}
						missing, err := own.Missing(ctx, []string{never, key})
						if err == nil && (len(missing) != 2 || !missing[0] || missing[1]) {
							fail(fmt.Errorf("own.Missing(%+q) = %v, want [true false]", []string{never, key}, missing))
						} else if !okErr(err) {
							fail(fmt.Errorf("own.Missing: %w", err))
						}
					})
				case op < 100:
					calls[8].Add(1)
					d := dbs[gr.IntN(len(dbs))]
					mon.do("DB.Suspend", func() {
						// Suspend waits for the calls in progress: with
						// callers always busy, its ctx may end first.
						sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
						err := d.Suspend(sctx)
						cancel()
						switch {
						case err == nil:
							suspended.Add(1)
						case !okErr(err, context.DeadlineExceeded):
							fail(fmt.Errorf("DB.Suspend: %w", err))
						}
						time.Sleep(time.Duration(gr.IntN(20)) * time.Millisecond) // calls meanwhile are answered, and judged
						d.Resume()
					})
				case op < 102:
					calls[9].Add(1)
					mon.do("a read-only open and Sources", func() {
						tb := tables[gr.IntN(len(tables))]
						ro, err := Open(ctx, DBConfig{Path: path, BusyTimeout: busy, Driver: testdriver.Driver(), ReadOnly: true}, Source{Table: tb, Column: "id", Snapshot: path + "." + tb + ".sfb"})
						if err != nil {
							fail(fmt.Errorf("read-only Open(%s): %w", tb, err))
						} else {
							if err := ro.Wait(ctx); err != nil && !errors.Is(err, ErrNotServing) {
								fail(fmt.Errorf("read-only Wait(%s): %w", tb, err))
							} else if !stats(ro).Attached {
								fail(fmt.Errorf("read-only Open(%s): not attached", tb))
							}
							_ = ro.Close(ctx)
						}
						var list []store.Listed
						rd, err := OpenDB(ctx, DBConfig{Path: path, BusyTimeout: busy, Driver: testdriver.Driver(), ReadOnly: true})
						if err == nil {
							list, err = sources(ctx, rd)
							_ = rd.Close(ctx)
						}
						if err != nil {
							fail(fmt.Errorf("Sources: %w", err))
						} else if len(list) < len(tables) {
							fail(fmt.Errorf("Sources lists %d sources, want at least %d", len(list), len(tables)))
						}
					})
				case op < 104:
					calls[10].Add(1)
					tb := tables[gr.IntN(len(tables))]
					mon.do("BuildSnapshot("+tb+")", func() {
						// The cron job's build, beside the app, to a
						// snapshot of its own.
						_, err := BuildSnapshot(ctx, DBConfig{Path: path, BusyTimeout: busy, Driver: testdriver.Driver()}, Source{Table: tb, Column: "id", Snapshot: fmt.Sprintf("%s.%s.cron%d.sfb", path, tb, g)})
						if err != nil {
							fail(fmt.Errorf("BuildSnapshot(%s): %w", tb, err))
						}
					})
				default:
					calls[11].Add(1)
					tb := spares[g]
					mon.do("DB.Index, Close and Detach("+tb+")", func() {
						sp, err := db.Index(ctx, Source{Table: tb, Column: "id"})
						if err != nil {
							if !okErr(err) {
								fail(fmt.Errorf("DB.Index(%s): %w", tb, err))
							}
							return
						}
						missing, err := sp.Missing(ctx, []string{ids(tb, 200)[gr.IntN(200)], "never"})
						if err == nil && (len(missing) != 2 || missing[0] || !missing[1]) {
							fail(fmt.Errorf("%s.Missing = %v, want [false true]", tb, missing))
						} else if !okErr(err) {
							fail(fmt.Errorf("%s.Missing: %w", tb, err))
						}
						if err := sp.Close(ctx); err != nil {
							fail(fmt.Errorf("%s.Close: %w", tb, err))
						}
						// Closed before its first scan ended, the attach
						// was undone: nothing to detach.
						if err := Detach(ctx, DBConfig{Path: path, BusyTimeout: busy, Driver: testdriver.Driver()}, tb, "id"); err != nil && !errors.Is(err, ErrNotAttached) {
							fail(fmt.Errorf("Detach(%s): %w", tb, err))
						}
					})
				}
			}
		}()
	}

	time.Sleep(runFor)
	// The run proves little until the child has compacted a log past the
	// filters; in a busy moment its writes may wait seconds for their turn
	// (SQLite's locks are not fair): give it that time.
	floors := func() (n int64, err error) {
		err = check.QueryRow(`SELECT coalesce(sum(log_floor), 0) FROM syncfilter_sources`).Scan(&n)
		return n, err
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if n, err := floors(); err != nil || n > 0 {
			break
		}
	}
	// Close everything while the callers keep calling.
	closing.Store(true)
	order := r.Perm(len(targets) + 2)
	for _, i := range order {
		if i == len(targets) {
			mon.do("DB.Close", func() {
				if err := db.Close(ctx); err != nil {
					fail(fmt.Errorf("DB.Close: %w", err))
				}
			})
			continue
		}
		if i == len(targets)+1 {
			mon.do("own.Close", func() {
				if err := own.Close(ctx); err != nil {
					fail(fmt.Errorf("own.Close: %w", err))
				}
			})
			continue
		}
		mon.do(targets[i].name+".Close", func() {
			if err := targets[i].ix.Close(ctx); err != nil {
				fail(fmt.Errorf("%s.Close: %w", targets[i].name, err))
			}
		})
	}
	time.Sleep(50 * time.Millisecond) // the callers meet the closed indexes
	for _, tg := range targets {
		closedEverywhere(t, mon, tg.ix)
	}
	closedEverywhere(t, mon, own)
	for _, d := range dbs {
		if err := d.Suspend(ctx); !errors.Is(err, ErrClosed) {
			t.Errorf("Suspend after Close = %v, want ErrClosed", err)
		}
		d.Resume() // a no-op
	}
	close(stop)
	callers.Wait()
	writers.Wait()
	if err := os.WriteFile(stopFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-childDone; err != nil {
		t.Fatalf("compacting process: %v\n%s", err, childOut)
	}
	mon.close()
	close(errs)
	var all []error
	for e := range errs {
		all = append(all, e)
	}
	var summary []string
	for i, n := range names {
		summary = append(summary, fmt.Sprintf("%s %d", n, calls[i].Load()))
	}
	var dropped, rebuilt uint64
	for _, tg := range targets {
		st := stats(tg.ix)
		dropped += st.Dropped
		rebuilt += st.Rebuilds
	}
	t.Logf("%s mode; calls: %s (%d returned nil); commits %d/%d/%d; %d drops, %d rebuilds, %d Progress calls; child: %s",
		mode, strings.Join(summary, ", "), suspended.Load(), commits[0].Load(), commits[1].Load(), commits[2].Load(), dropped, rebuilt, progressCalls.Load(), strings.TrimSpace(childOut))
	if len(all) > 0 {
		t.Fatalf("seed %d: %d wrong answers or errors; first ones:\n%v", seed, len(all), errors.Join(all[:min(len(all), 12)]...))
	}
	goroutinesBackTo(t, baseline)
	if n, err := floors(); err != nil || n == 0 {
		t.Fatalf("the child never compacted a log (floors %d, %v): the run proves little", n, err)
	}
}
