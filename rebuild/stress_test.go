package rebuild

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// stressTime is how long each variant of TestOneSQLiteUnderStress runs
// at least: SYNCFILTER_STRESS_TIME (make stress: minutes), 2s by default.
func stressTime(t *testing.T) time.Duration {
	if s := os.Getenv("SYNCFILTER_STRESS_TIME"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("SYNCFILTER_STRESS_TIME=%s: %v", s, err)
		}
		return d
	}
	return 2 * time.Second
}

// stressGrace is how long a stress may run past its time to see each
// event of the app's life at least once (stressEvents): a Save on a
// pure-Go SQLite under this load takes a second or two, so a run of two
// seconds may end before the first reopen. Past it, the test fails and
// says what never happened.
const stressGrace = 60 * time.Second

// TestOneSQLiteUnderStress: the app and the library in one process,
// through the one SQLite copy the app links (the tests' driver), as an
// app on modernc or ncruces runs them: app writers committing pages of
// new ids in transactions (some rolled back) on the app's own pool, whose
// connections churn (closing a connection closes its file descriptor,
// which drops the locks a second SQLite copy holds); askers judging
// Missing and Fetched against what was committed before each call; a
// filter small enough to rebuild itself again and again; Save, Rebuild,
// Close and OpenDB again meanwhile. It runs for stressTime and until each
// of those events happened at least once, automatic rebuilds included.
// Afterwards the database passes integrity_check, every committed row is
// there and no row of a rolled-back transaction is. In WAL and DELETE
// mode, with the library given the app's driver (DBConfig.Driver) or the
// app's own *sql.DB (DBConfig.DB: keys confirmed on the app's pool, as
// the README recommends).
func TestOneSQLiteUnderStress(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"WAL", "DELETE"} {
		for _, pass := range []string{"Driver", "DB"} {
			t.Run(mode+"/"+pass, func(t *testing.T) {
				t.Parallel()
				stressOneSQLite(t, mode, pass == "DB", stressTime(t))
			})
		}
	}
}

// stressEvents counts the events of the app's life in a stress: a run
// ends only once each happened (lacking).
type stressEvents struct {
	saves, reopens, rebuilds atomic.Int64 // Saves that wrote the file, Close and OpenDB again, the app's Rebuild calls
	autosClosed              atomic.Int64 // automatic rebuilds of the indexes closed so far
}

// lacking names the events that did not happen yet ("" once each did);
// autos is the automatic rebuilds so far.
func (e *stressEvents) lacking(autos int64) string {
	var out []string
	for _, c := range []struct {
		n    int64
		name string
	}{{e.saves.Load(), "a Save"}, {e.reopens.Load(), "a Close and OpenDB again"}, {e.rebuilds.Load(), "an app Rebuild"}, {autos, "an automatic rebuild"}} {
		if c.n == 0 {
			out = append(out, c.name)
		}
	}
	return strings.Join(out, ", ")
}

func stressOneSQLite(t *testing.T, mode string, onAppDB bool, run time.Duration) {
	ctx := context.Background()
	ref := newReference("stress", 2_000_000)
	seed := make([]string, 2000)
	for i := range seed {
		seed[i] = ref.id(i).stored
	}
	ref.committed(0, len(seed))
	// On SQLCipher the database is encrypted, its key in the URI; on
	// ncruces too with SYNCFILTER_STRESS_VFS=adiantum (or xts).
	var params url.Values
	switch vfs := os.Getenv("SYNCFILTER_STRESS_VFS"); {
	case testdriver.Name() == "sqlcipher":
		params = url.Values{"_pragma_key": {"x'" + testKey + "'"}}
	case testdriver.Name() == "ncruces" && vfs != "":
		params = url.Values{"vfs": {vfs}, "hexkey": {testKey}}
	}
	path := modeDBWith(t, mode, params, []string{"records"}, seed...)
	app := modeConnWith(t, path, mode, params)
	app.SetMaxOpenConns(6)
	app.SetMaxIdleConns(1)
	app.SetConnMaxLifetime(20 * time.Millisecond)
	dcfg := DBConfig{Path: path, Driver: testdriver.Driver(), ConnParams: params}
	if onAppDB {
		dcfg = DBConfig{Path: path, DB: app, ConnParams: params}
	}
	src := Source{Table: "records", Column: "id", Snapshot: path + ".sfb", Capacity: 1024, Headroom: 1, FPR: 0.05,
		RebuildFactor: 1.5}
	open := func() (*DB, *Index) {
		db, err := OpenDB(ctx, dcfg)
		if err != nil {
			t.Fatal(err)
		}
		ix, err := db.Index(ctx, src)
		if err != nil {
			t.Fatal(err)
		}
		return db, ix
	}
	type handle struct {
		db *DB
		ix *Index
	}
	var cur atomic.Pointer[handle]
	db, ix := open()
	cur.Store(&handle{db, ix})

	stop := make(chan struct{})
	errs := make(chan error, 64)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	var wg sync.WaitGroup
	var commits, rolledBack, judged, wrong atomic.Int64
	var ev stressEvents
	var mu sync.Mutex
	var undone []string // ids of rolled-back transactions
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Duration(rng.IntN(3)) * time.Millisecond):
				}
				list := ref.take(10 + rng.IntN(90))
				if list == nil {
					return
				}
				tx, err := app.Begin()
				if err != nil {
					fail(fmt.Errorf("writer: %w", err))
					return
				}
				ids := make([]string, len(list))
				for j, i := range list {
					ids[j] = ref.id(i).stored
					if _, err := tx.Exec(`INSERT INTO records (id, body) VALUES (?, 'x')`, ids[j]); err != nil {
						_ = tx.Rollback()
						fail(fmt.Errorf("writer: insert: %w", err))
						return
					}
				}
				if rng.IntN(10) == 0 {
					if err := tx.Rollback(); err != nil {
						fail(fmt.Errorf("writer: rollback: %w", err))
						return
					}
					for _, i := range list {
						ref.state[i].Store(0)
					}
					mu.Lock()
					undone = append(undone, ids...)
					mu.Unlock()
					rolledBack.Add(1)
					continue
				}
				if err := tx.Commit(); err != nil {
					fail(fmt.Errorf("writer: commit: %w", err))
					return
				}
				for _, i := range list {
					ref.state[i].Store(2)
				}
				commits.Add(1)
			}
		}()
	}
	ask := func(fn func(ix *Index) error) {
		for {
			err := fn(cur.Load().ix)
			if !errors.Is(err, ErrClosed) {
				if err != nil {
					fail(err)
				}
				return
			}
		}
	}
	for a := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(a), 9))
			for {
				select {
				case <-stop:
					return
				default:
				}
				p := newProbe(ref, rng.IntN, 20+rng.IntN(200))
				if rng.IntN(4) == 0 {
					j := rng.IntN(len(p.keys))
					ask(func(ix *Index) error {
						got, err := ix.Fetched(ctx, p.keys[j])
						if err != nil {
							return err
						}
						judged.Add(1)
						if err := p.judgeFetched(j, got); err != nil {
							wrong.Add(1)
							return err
						}
						return nil
					})
					continue
				}
				ask(func(ix *Index) error {
					missing, err := ix.Missing(ctx, p.keys)
					if err != nil {
						return err
					}
					judged.Add(int64(len(p.keys)))
					bad := p.judgeMissing(missing)
					wrong.Add(int64(len(bad)))
					return errors.Join(bad...)
				})
			}
		}()
	}
	wg.Add(1)
	go func() { // the app's life: Save and Rebuild now and then, Close and OpenDB again
		defer wg.Done()
		rng := rand.New(rand.NewPCG(3, 3))
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(50+rng.IntN(150)) * time.Millisecond):
			}
			h := cur.Load()
			switch n := rng.IntN(6); {
			case n < 3:
				err := h.ix.Save(ctx)
				if err != nil && !errors.Is(err, ErrNotServing) {
					fail(fmt.Errorf("save: %w", err))
					return
				}
				if err == nil {
					ev.saves.Add(1)
				}
			case n == 3:
				if err := h.ix.Rebuild(ctx); err != nil {
					fail(fmt.Errorf("rebuild: %w", err))
					return
				}
				ev.rebuilds.Add(1)
			default:
				db, ix := open()
				cur.Store(&handle{db, ix})
				if err := h.db.Close(ctx); err != nil {
					fail(fmt.Errorf("close: %w", err))
					return
				}
				ev.autosClosed.Add(int64(stats(h.ix).AutoRebuilds))
				ev.reopens.Add(1)
			}
		}
	}()
	// Run for the time asked and until every event of the app's life
	// happened; a wrong answer or a failed call ends the run at once.
	began := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case err := <-errs:
			t.Error(err)
			break wait
		case <-tick.C:
		}
		lacking := ev.lacking(ev.autosClosed.Load() + int64(stats(cur.Load().ix).AutoRebuilds))
		ran := time.Since(began)
		if ran >= run && lacking == "" {
			break
		}
		if ran >= run+stressGrace {
			t.Errorf("after %v (%v asked), the stress still lacks %s: %d saves, %d reopens, %d app rebuilds, %d commits, %d answers judged",
				ran.Round(time.Millisecond), run, lacking, ev.saves.Load(), ev.reopens.Load(), ev.rebuilds.Load(), commits.Load(), judged.Load())
			break
		}
	}
	ran := time.Since(began)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	last := cur.Load()
	if err := last.db.Close(ctx); err != nil {
		t.Fatal(err)
	}
	autos := ev.autosClosed.Load() + int64(stats(last.ix).AutoRebuilds)
	var check string
	if err := app.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q, %v", check, err)
	}
	stored := map[string]bool{}
	rows, err := app.Query(`SELECT id FROM records`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		stored[id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	committed := 0
	for i := range int(min(ref.next.Load(), int64(len(ref.state)))) {
		if ref.state[i].Load() == 2 {
			committed++
			if id := ref.id(i).stored; !stored[id] {
				t.Fatalf("committed row %+q is gone", id)
			}
		}
	}
	for _, id := range undone {
		if stored[id] {
			t.Fatalf("row %+q of a rolled-back transaction is there", id)
		}
	}
	if len(stored) != committed {
		t.Fatalf("%d rows, %d committed", len(stored), committed)
	}
	how := "Driver"
	if onAppDB {
		how = "DB"
	}
	t.Logf("%s, %s, %s, %v (ran %v): %d rows committed in %d transactions (%d rolled back), %d rows present, integrity_check %s; %d answers judged, %d wrong; %d saves, %d reopens, %d app rebuilds, %d automatic rebuilds",
		testdriver.Name()+map[bool]string{true: " (encrypted)"}[params != nil], mode, how, run, ran.Round(100*time.Millisecond), committed, commits.Load(), rolledBack.Load(), len(stored), check,
		judged.Load(), wrong.Load(), ev.saves.Load(), ev.reopens.Load(), ev.rebuilds.Load(), autos)
	if judged.Load() == 0 || commits.Load() == 0 {
		t.Fatalf("the stress did not run: %d answers judged, %d commits", judged.Load(), commits.Load())
	}
}
