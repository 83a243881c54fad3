package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/rebuild/ops"
)

// The many-collection test: one app process serves ten
// collections of one database (OpenDB, DB.Index) to many goroutines
// calling Missing, while a second process writes to every table (NFC and
// NFD ids among them; one table is rebuilt by a migration midway, which
// drops the library's triggers) and the cron job, the real binary, runs
// `rebuild --all` again and again. Every answer is judged against what was
// committed before the call began; at the end each index reloads the
// cron's snapshot and answers exactly. The app's connections to the
// database (its descriptors, /proc/self/fd) and goroutines are counted
// against fixed budgets: bounds that hold at every moment, not timings.

const (
	loadTables    = 10
	loadSeed      = 2000 // rows per table before the load
	loadBatch     = 12   // rows per table and round of the writer
	loadMaxRounds = 2000 // the writer stops sooner: when the test closes its stdin
	loadMigrateAt = 3    // the round in which the writer migrates the last table
	loadReaders   = 8    // goroutines calling Missing
	loadCronRuns  = 2    // cron runs during the load, at least
	writerEnv     = "SYNCFILTER_LOAD_WRITER_DB"
)

// loadKey returns the id of a table's row of kind ("s" seeded, "w"
// written by the writer in round r, "n" never stored) as stored, and as
// the app asks for it: in the other normalization form where the id has
// two, so that every answer also checks canonical equivalence.
func loadKey(kind string, table, r, j int) (stored, asked string) {
	base := fmt.Sprintf("%s%d-%d-%d", kind, table, r, j)
	switch j % 4 {
	case 1:
		stored = "cafe\u0301-" + base // NFD
	case 2:
		stored = "caf\u00e9-" + base // NFC
	case 3:
		stored = "\u30c6\u3099\u30fc\u30bf-" + base // デ decomposed
	default:
		stored = base
	}
	if norm.NFC.IsNormalString(stored) {
		return stored, norm.NFD.String(stored)
	}
	return stored, norm.NFC.String(stored)
}

func loadTable(i int) string { return fmt.Sprintf("coll%d", i) }

// TestLoadWriterChild is not a test: it is the writing process of
// TestManyCollectionsUnderLoad. Round after round it commits a batch of
// rows to every table, one transaction each, and prints "committed TABLE
// ROUND" after each commit, until its stdin closes. In round
// loadMigrateAt it rebuilds the last table as migrations do
// (create, copy, drop, rename), which drops the library's triggers.
func TestLoadWriterChild(t *testing.T) {
	t.Parallel()
	path := os.Getenv(writerEnv)
	if path == "" {
		t.Skip("the writing process of TestManyCollectionsUnderLoad")
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=60000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	stop := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stop) }()
	for r := range loadMaxRounds {
		select {
		case <-stop:
			return
		default:
		}
		for i := range loadTables {
			tx, err := db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			if r == loadMigrateAt && i == loadTables-1 {
				for _, q := range []string{
					`CREATE TABLE migrating (id TEXT PRIMARY KEY, body TEXT, etag TEXT)`,
					`INSERT INTO migrating (id, body) SELECT id, body FROM ` + loadTable(i),
					`DROP TABLE ` + loadTable(i),
					`ALTER TABLE migrating RENAME TO ` + loadTable(i),
				} {
					if _, err := tx.Exec(q); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
			}
			for j := range loadBatch {
				stored, _ := loadKey("w", i, r, j)
				if _, err := tx.Exec(`INSERT INTO `+loadTable(i)+` (id, body) VALUES (?, 'w')`, stored); err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			fmt.Printf("committed %d %d\n", i, r)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// loadDB creates the app's database (WAL) with the ten tables and their
// seeded rows.
func loadDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.db")
	db := sqlDB(t, path)
	defer db.Close()
	if _, err := db.Exec(`PRAGMA journal_mode = WAL`); err != nil {
		t.Fatal(err)
	}
	for i := range loadTables {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`CREATE TABLE ` + loadTable(i) + ` (id TEXT PRIMARY KEY, body TEXT)`); err != nil {
			t.Fatal(err)
		}
		for j := range loadSeed {
			stored, _ := loadKey("s", i, 0, j)
			if _, err := tx.Exec(`INSERT INTO `+loadTable(i)+` (id, body) VALUES (?, 's')`, stored); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// dbConns counts this process's descriptors open on the database file
// itself: one per SQLite connection.
func dbConns(t *testing.T, path string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd here: %v", err)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && target == real {
			n++
		}
	}
	return n
}

// settledGoroutines returns the goroutine count once it stopped changing.
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for range 100 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			return n
		}
		n = m
	}
	return n
}

func TestManyCollectionsUnderLoad(t *testing.T) {
	// Not parallel: counts the process's goroutines.
	if testing.Short() {
		t.Skip("a second process and the cron job, for seconds")
	}
	ctx := context.Background()
	path := loadDB(t)
	dir := filepath.Dir(path)
	if err := os.Mkdir(filepath.Join(dir, "snaps"), 0o755); err != nil {
		t.Fatal(err)
	}
	snapshot := func(i int) string { // most beside the database by the documented name, some elsewhere
		if i%3 == 2 {
			return filepath.Join(dir, "snaps", loadTable(i)+".sfb")
		}
		return ops.DefaultSnapshot(path, loadTable(i), "id")
	}

	// The app: one DB, ten indexes. Budgets: connections never more than
	// the readers, the writer and one data_version reader; goroutines, idle,
	// a fixed few whatever the number of collections.
	const goroutineBudget = 8
	readers := min(4, max(2, runtime.GOMAXPROCS(0)))
	connBudget := readers + 5 // the readers, the writer, a rebuild's scan and its count, a scan for stored spellings, the data_version reader
	base := settledGoroutines()
	db, err := rebuild.OpenDB(ctx, rebuild.DBConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = db.Close(ctx)
		}
	}()
	ixs := make([]*rebuild.Index, loadTables)
	for i := range ixs {
		if ixs[i], err = db.Index(ctx, rebuild.Source{Table: loadTable(i), Column: "id", Snapshot: snapshot(i)}); err != nil {
			t.Fatal(err)
		}
	}
	idle := settledGoroutines() - base
	if idle > goroutineBudget {
		t.Fatalf("ten idle collections run %d goroutines, budget %d", idle, goroutineBudget)
	}
	var maxConns atomic.Int64
	sampleConns := func() {
		if n := int64(dbConns(t, path)); n > maxConns.Load() {
			maxConns.Store(n)
		}
	}
	sampleConns()

	// The writer process.
	committed := make([]atomic.Int64, loadTables) // rounds acknowledged, per table: committed before any later load
	child := exec.Command(os.Args[0], "-test.run=^TestLoadWriterChild$", "-test.count=1")
	child.Env = append(os.Environ(), writerEnv+"="+path)
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var childErr strings.Builder
	child.Stderr = &childErr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	childDone := make(chan error, 1)
	var childOut strings.Builder
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var i, r int
			if _, err := fmt.Sscanf(sc.Text(), "committed %d %d", &i, &r); err == nil && i >= 0 && i < loadTables {
				committed[i].Store(int64(r + 1))
			} else {
				childOut.WriteString(sc.Text() + "\n")
			}
		}
		childDone <- child.Wait()
	}()
	defer func() { _ = stdin.Close() }()

	// The app's goroutines: every answer judged.
	var stop atomic.Bool
	var calls, judged, failures atomic.Int64
	fail := func(format string, args ...any) {
		if failures.Add(1) <= 10 {
			t.Errorf(format, args...)
		}
	}
	var wg sync.WaitGroup
	for g := range loadReaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 21))
			for n := 0; !stop.Load() || n < 20; n++ {
				i := rng.IntN(loadTables)
				c := int(committed[i].Load()) // rounds committed before the call begins
				var page []string
				want := map[string]bool{} // true: fetched; false: missing; absent: in flight, either
				add := func(k string, fetched bool) {
					if _, dup := want[k]; !dup {
						want[k] = fetched
						page = append(page, k)
					}
				}
				for range 8 {
					_, k := loadKey("s", i, 0, rng.IntN(loadSeed))
					add(k, true)
				}
				for range min(c, 8) {
					_, k := loadKey("w", i, rng.IntN(c), rng.IntN(loadBatch))
					add(k, true)
				}
				for j := range 4 { // the round being written: not judged
					if _, k := loadKey("w", i, c, j); !slices.Contains(page, k) {
						page = append(page, k)
					}
				}
				for range 8 {
					_, k := loadKey("n", i, g, rng.IntN(1_000_000))
					add(k, false)
				}
				missing, err := ixs[i].Missing(ctx, page)
				calls.Add(1)
				if err != nil {
					fail("%s: Missing: %v", loadTable(i), err)
					return
				}
				if len(missing) != len(page) {
					fail("%s: Missing answered %d positions of %d", loadTable(i), len(missing), len(page))
					return
				}
				got := map[string]bool{}
				for j, k := range page {
					if missing[j] {
						got[k] = true
					}
				}
				for k, fetched := range want {
					judged.Add(1)
					switch {
					case fetched && got[k]:
						fail("%s: %+q was committed before the call (round < %d), answered missing", loadTable(i), k, c)
					case !fetched && !got[k]:
						fail("%s: %+q was never inserted, answered fetched", loadTable(i), k)
					}
				}
				if n%16 == 0 { // and one id at a time
					_, k := loadKey("s", i, 0, rng.IntN(loadSeed))
					if ok, err := ixs[i].Fetched(ctx, k); err != nil || !ok {
						fail("%s: Fetched(%+q) = %v, %v; want true", loadTable(i), k, ok, err)
					}
					_, k = loadKey("n", i, g, rng.IntN(1_000_000))
					if ok, err := ixs[i].Fetched(ctx, k); err != nil || ok {
						fail("%s: Fetched(%+q) = %v, %v; want false", loadTable(i), k, ok, err)
					}
				}
			}
		}()
	}

	// The cron job, until it ran loadCronRuns times and the migrated
	// table was written after its migration.
	prom := filepath.Join(dir, "syncfilter.prom")
	cron := []string{"rebuild", "--db", path, "--all", "--metrics-file", prom, "--busy-timeout", "1m"}
	runs := 0
	for runs < loadCronRuns || committed[loadTables-1].Load() <= loadMigrateAt+1 {
		r := run(t, "", cron...)
		sampleConns()
		if r.code != 0 {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("cron run %d during the load: exit %d\n%s%s", runs+1, r.code, r.stdout, r.stderr)
		}
		runs++
		if failures.Load() > 0 {
			break
		}
	}
	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-childDone; err != nil {
		t.Fatalf("writer process: %v\n%s%s", err, childOut.String(), childErr.String())
	}
	stop.Store(true)
	wg.Wait()
	sampleConns()
	if t.Failed() {
		t.FailNow()
	}
	// The migration re-attached the migrated table (the index, or the
	// cron job first: then the index dropped its filter of the old epoch
	// if it had loaded one), and no other.
	for i, ix := range ixs {
		st := ix.Stats()
		switch {
		case i == loadTables-1 && !st.Attached:
			t.Fatalf("%s: not attached again after its migration (%d filters dropped); stats %+v", loadTable(i), st.Dropped, st)
		case i != loadTables-1 && st.Dropped > 0:
			t.Fatalf("%s: %d filters dropped without a migration", loadTable(i), st.Dropped)
		}
	}
	rounds := make([]int, loadTables)
	for i := range rounds {
		rounds[i] = int(committed[i].Load())
	}
	t.Logf("%d calls, %d answers judged, %d cron runs, writer rounds per table %v; the app: at most %d connections on the database, %d goroutines idle",
		calls.Load(), judged.Load(), runs, rounds, maxConns.Load(), idle)

	// The cron job once more, then every index reloads its snapshot and
	// answers exactly: every row fetched in the spelling not stored, no
	// never-inserted id.
	r := run(t, "", cron...).must(t, 0)
	if !strings.Contains(r.stdout, fmt.Sprintf("%d of %d sources of %s rebuilt", loadTables, loadTables, path)) {
		t.Fatalf("last cron run: %q", r.stdout)
	}
	m := seriesOf(t, prom)
	for i := range loadTables {
		src := loadTable(i) + ".id"
		if m["syncfilter_rebuild_last_run_success"][src].value != 1 || m["syncfilter_rebuild_rows"][src].value != float64(loadSeed+rounds[i]*loadBatch) {
			t.Fatalf("metrics of %s: success %v, rows %v, want %d", src, m["syncfilter_rebuild_last_run_success"][src].value,
				m["syncfilter_rebuild_rows"][src].value, loadSeed+rounds[i]*loadBatch)
		}
	}
	for i, ix := range ixs {
		if err := ix.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if err := ops.Reload(ctx, ix); err != nil {
			t.Fatalf("%s: Reload of the cron's snapshot: %v", loadTable(i), err)
		}
		var page, never []string
		check := func() {
			ans, err := ix.Missing(ctx, page)
			if err != nil {
				t.Fatal(err)
			}
			var missing []string
			for j, m := range ans {
				if m {
					missing = append(missing, page[j])
				}
			}
			if fmt.Sprint(missing) != fmt.Sprint(never) {
				t.Fatalf("%s after Reload: Missing = %d ids %.200q, want the %d never inserted %.200q", loadTable(i), len(missing), missing, len(never), never)
			}
			page, never = page[:0], never[:0]
		}
		for j := range loadSeed {
			_, k := loadKey("s", i, 0, j)
			page = append(page, k)
			if j%10 == 0 {
				_, k = loadKey("n", i, 99, j)
				page, never = append(page, k), append(never, k)
			}
			if len(page) >= 500 {
				check()
			}
		}
		for rd := range rounds[i] {
			for j := range loadBatch {
				_, k := loadKey("w", i, rd, j)
				page = append(page, k)
			}
			if len(page) >= 500 {
				check()
			}
		}
		check()
		if st := ix.Stats(); !st.Serving {
			t.Fatalf("%s after Reload: not serving", loadTable(i))
		}
	}
	sampleConns()
	if n := maxConns.Load(); n > int64(connBudget) {
		t.Fatalf("the app held %d connections to the database, budget %d (readers %d, the writer, a scan, its count, a spellings scan, the data_version reader)", n, connBudget, readers)
	}
	if err := db.Close(ctx); err != nil {
		t.Fatal(err)
	}
	closed = true
	if n := dbConns(t, path); n != 0 {
		t.Fatalf("%d connections left after Close", n)
	}
	if g := settledGoroutines(); g > base {
		t.Fatalf("%d goroutines after Close, %d before OpenDB", g, base)
	}
}
