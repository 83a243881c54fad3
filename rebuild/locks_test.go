package rebuild

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// TestQueriesAndRebuildsNeverWaitForTheAppsWriters is the lock cycle an
// app's own transactions could make with the index: while other
// connections commit NFD and NFC ids without pause, and the app writes
// in its own transactions on its own connection (asking the index while
// its write transaction is open),
// Rebuild, Missing and Fetched all return, with context.Background(), and
// the writers keep committing during the rebuilds. In WAL and in
// rollback-journal mode.
func TestQueriesAndRebuildsNeverWaitForTheAppsWriters(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"wal", "delete"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			lockCycle(t, mode)
		})
	}
}

func lockCycle(t *testing.T, mode string) {
	ctx := context.Background()
	const seed, capacity = 4000, 200000
	ref := newReference("lc", capacity)
	seedIDs := make([]string, seed)
	for i := range seedIDs {
		seedIDs[i] = ref.id(i).stored
	}
	path := modeDB(t, mode, []string{"records"}, seedIDs...)
	ref.committed(0, seed)
	mon := newMonitor(t, callBound)
	// SQLite's locks are not fair: in a rollback-journal mode, three
	// connections that write most of the time can keep the index's
	// writer waiting for seconds.
	// While a rebuild scans, its first Progress call waits until every
	// writer has committed more: the rebuild is held in the middle of its
	// scan, and the writers must go on (no timing: a deadline only
	// against a hang).
	writers := make([]atomic.Int64, 3)
	var hold atomic.Bool
	var stalled atomic.Int64
	progress := func(done, total int64) {
		if !hold.CompareAndSwap(true, false) {
			return
		}
		var before [3]int64
		for w := range writers {
			before[w] = writers[w].Load()
		}
		deadline := time.Now().Add(30 * time.Second)
		for w := range writers {
			for writers[w].Load() < before[w]+3 {
				if time.Now().After(deadline) {
					stalled.Add(1)
					return
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	ix := open(t, config{DBConfig: DBConfig{Path: path, BusyTimeout: 30 * time.Second, Readers: 2, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb", ProgressEvery: 500, Progress: progress}})

	stop := make(chan struct{})
	errs := make(chan error, 64)
	var wg sync.WaitGroup
	// Two other connections commit ids as fast as they can, one per
	// transaction and in batches; the reference alternates NFD, NFC,
	// KELVIN SIGN and ASCII ids.
	for w, batch := range []int{1, 7} {
		db := modeConn(t, path, mode)
		db.SetMaxOpenConns(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			inserter(db, "records", ref, batch, 500*time.Microsecond, stop, &writers[w], errs)
		}()
	}
	// The app: its own connection, its own transactions, and questions to
	// the index while its write transaction is open.
	app := modeConn(t, path, mode)
	app.SetMaxOpenConns(1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond): // the next page from the server
			}
			list := ref.take(3)
			if list == nil {
				return
			}
			tx, err := app.Begin()
			if err != nil {
				errs <- err
				return
			}
			for _, i := range list {
				if _, err := tx.Exec(`INSERT INTO records (id, body) VALUES (?, 'app')`, ref.id(i).stored); err != nil {
					errs <- err
					_ = tx.Rollback()
					return
				}
			}
			// Inside the open write transaction: the app's own ids (not
			// committed) and a committed one.
			committed := list[0] % seed
			page := []string{ref.id(committed).forms[0], ref.id(list[0]).stored, "never-app-" + ref.id(list[0]).stored}
			mon.do("Missing inside the app's write transaction", func() {
				missing, err := missingList(ctx, ix, page)
				switch {
				case err != nil:
					errs <- fmt.Errorf("Missing inside the app's transaction: %w", err)
				case contains(missing, page[0]) || !contains(missing, page[2]):
					errs <- fmt.Errorf("Missing(%+q) inside the app's transaction = %+q", page, missing)
				}
			})
			mon.do("Fetched inside the app's write transaction", func() {
				if ok, err := ix.Fetched(ctx, ref.id(committed).forms[len(ref.id(committed).forms)-1]); err != nil || !ok {
					errs <- fmt.Errorf("Fetched of a committed id inside the app's transaction = %v, %v", ok, err)
				}
			})
			if err := tx.Commit(); err != nil {
				errs <- err
				return
			}
			for _, i := range list {
				ref.state[i].Store(2)
			}
			writers[2].Add(1)
		}
	}()
	// Askers: Missing and Fetched with Background contexts, judged.
	var askers sync.WaitGroup
	for a := range 3 {
		askers.Add(1)
		go func() {
			defer askers.Done()
			r := newRand(uint64(a) + 1)
			for {
				select {
				case <-stop:
					return
				default:
				}
				p := newProbe(ref, r.IntN, 64)
				if r.IntN(2) == 0 {
					mon.do("Missing", func() {
						missing, err := ix.Missing(ctx, p.keys)
						if err != nil {
							errs <- fmt.Errorf("Missing: %w", err)
							return
						}
						for _, e := range p.judgeMissing(missing) {
							errs <- e
						}
					})
					continue
				}
				for j := range p.keys[:8] {
					mon.do("Fetched", func() {
						got, err := ix.Fetched(ctx, p.keys[j])
						if err != nil {
							errs <- fmt.Errorf("Fetched: %w", err)
						} else if e := p.judgeFetched(j, got); e != nil {
							errs <- e
						}
					})
				}
			}
		}()
	}
	// Rebuilds, while all of that runs; the writers' commits are counted
	// across them.
	const rebuilds = 4
	for range rebuilds {
		hold.Store(true)
		mon.do("Rebuild", func() {
			if err := ix.Rebuild(ctx); err != nil {
				errs <- fmt.Errorf("Rebuild: %w", err)
			}
		})
	}
	close(stop)
	askers.Wait()
	wg.Wait()
	close(errs)
	var all []error
	for e := range errs {
		all = append(all, e)
	}
	if len(all) > 0 {
		t.Fatalf("%d errors; first ones:\n%v", len(all), errors.Join(all[:min(len(all), 10)]...))
	}
	if n := stalled.Load(); n > 0 {
		t.Errorf("in %d of %d rebuilds held in their scan, a writer committed nothing for 30 s: the rebuild stopped it", n, rebuilds)
	}
	st := stats(ix)
	t.Logf("%s: stats: rebuilds %d, dropped %d, caught up %d", mode, st.Rebuilds, st.Dropped, st.CaughtUp)
	if st.Rebuilds < rebuilds {
		t.Fatalf("%d rebuilds recorded, want at least %d", st.Rebuilds, rebuilds)
	}
}

// TestScansNeverWaitForAReaderTheirCallerHolds: with one or two reading
// connections (DBConfig.Readers) the first open's scan, a rebuild's scan
// and the count that sizes the filter never wait for a connection their
// own call holds.
func TestScansNeverWaitForAReaderTheirCallerHolds(t *testing.T) {
	t.Parallel()
	rows := ids("seed", 40000) // more than the scan's chunks buffered ahead of the builder
	for _, readers := range []int{1, 2} {
		t.Run(fmt.Sprint(readers), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			path := appDB(t, rows...)
			mon := newMonitor(t, callBound)
			cfg := appConfig(path)
			cfg.Readers = readers
			var ix *Index
			mon.do("first Open (attach and scan)", func() { ix = open(t, cfg) })
			mon.do("Rebuild", func() {
				if err := ix.Rebuild(ctx); err != nil {
					t.Error(err)
				}
			})
			// After a migration the rebuild resolves the source again
			// (taking a reader) before it scans.
			mustExec(t, rawDB(t, path), `CREATE INDEX records_body ON records (body)`)
			mon.do("Rebuild after a change of schema", func() {
				if err := ix.Rebuild(ctx); err != nil {
					t.Error(err)
				}
			})
			expect(t, ix, set(rows[:50]), append(rows[:50:50], ids("never", 50)...))
			if st := stats(ix); st.Capacity < uint64(len(rows)) {
				t.Fatalf("capacity %d for %d rows: not sized from the count", st.Capacity, len(rows))
			}
		})
	}
}
