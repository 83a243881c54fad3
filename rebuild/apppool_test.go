package rebuild

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// TestConfirmOnTheAppsPool: with the app's *sql.DB handed over
// (DBConfig.DB), answers are exact, including rows the app just
// committed on that pool, and a call made while the app holds its pool's
// only connection (Missing inside the app's own transaction) does not
// wait for it: the library's reader confirms instead.
func TestConfirmOnTheAppsPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := modeDB(t, "WAL", []string{"records"}, ids("seed", 2000)...)
	app := modeConn(t, path, "WAL")
	app.SetMaxOpenConns(1)
	cfg := appConfig(path)
	cfg.DB, cfg.Driver = app, nil
	ix := open(t, cfg)
	insertInto(t, app, "records", ids("later", 300)...)
	expect(t, ix, set(ids("seed", 2000), ids("later", 300)), append(append(ids("seed", 50), ids("later", 50)...), ids("never", 50)...))
	tx, err := app.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	missingWithin(t, ix, append(ids("seed", 20), "never"), "Missing waited for the connection the app's transaction holds")
}

// TestCallOnTheAppsPoolTakesNoReader: a page confirmed on the app's pool
// takes none of the library's reading connections, so a call never waits
// for one that a long read of the library holds meanwhile (here every
// reader is held).
func TestCallOnTheAppsPoolTakesNoReader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := modeDB(t, "WAL", []string{"records"}, ids("seed", 500)...)
	app := modeConn(t, path, "WAL")
	cfg := appConfig(path)
	cfg.DB, cfg.Driver, cfg.Readers = app, nil, 1
	ix := open(t, cfg)
	insertInto(t, app, "records", ids("later", 20)...)
	f := ix.db.bg.Files.Current()
	held, err := f.St.Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer f.St.Release(held)
	missingWithin(t, ix, append(append(ids("seed", 20), ids("later", 20)...), "never"), "Missing on the app's pool waited for the library's reading connection")
}

// TestAppDBMustMatch: the app's *sql.DB (DBConfig.DB) is refused at open,
// before anything is written, when DBConfig.Driver names a driver of
// another type, or when its main database is another file, an in-memory
// or a temporary one; it is taken when it is the same file under another
// name (a symbolic link), and beside a Driver of the same type.
func TestAppDBMustMatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := modeDB(t, "WAL", []string{"records"}, ids("seed", 20)...)
	other := modeDB(t, "WAL", []string{"records"}, ids("seed", 20)...)
	before := schema(t, path)
	d := testdriver.Driver()
	on := func(p string) *sql.DB {
		db := sql.OpenDB(dsnConnector{d, p})
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	app := modeConn(t, path, "WAL")
	refused := map[string]DBConfig{
		"another file":             {Path: path, DB: modeConn(t, other, "WAL")},
		"an in-memory db":          {Path: path, DB: on("file::memory:")},
		"a temporary db":           {Path: path, DB: on("")},
		"a closed handle":          {Path: path, DB: func() *sql.DB { db := modeConn(t, path, "WAL"); db.Close(); return db }()},
		"the file at another path": {Path: other, DB: app},
	}
	for _, name := range testdriver.Names() {
		if od, _ := testdriver.Get(name); reflect.TypeOf(od) != reflect.TypeOf(d) {
			refused["a Driver of "+name] = DBConfig{Path: path, DB: app, Driver: od}
		}
	}
	for what, cfg := range refused {
		ix, err := Open(ctx, cfg, Source{Table: "records", Column: "id"})
		if err == nil {
			_ = ix.Close(ctx)
			t.Errorf("%s: opened", what)
			continue
		}
		if what != "a closed handle" && !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v, want ErrBadConfig", what, err)
		}
		t.Logf("%s: %v", what, err)
	}
	if !bytes.Equal(schema(t, path), before) || !bytes.Equal(schema(t, other), before) {
		t.Fatal("a refused open changed a schema")
	}
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(path, link); err != nil {
		t.Skip(err)
	}
	same := reflect.New(reflect.TypeOf(d).Elem()).Interface().(driver.Driver) // another value of the same type
	for what, cfg := range map[string]DBConfig{
		"the file through a link":   {Path: link, DB: app},
		"a Driver of the same type": {Path: path, DB: app, Driver: same},
		"a handle through the link": {Path: path, DB: modeConn(t, link, "WAL")},
	} {
		ix, err := Open(ctx, cfg, Source{Table: "records", Column: "id"})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		expect(t, ix, set(ids("seed", 20)), append(ids("seed", 20), "never"))
		if err := ix.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// dsnConnector opens dsn with d as it is, an in-memory database or a
// temporary one included.
type dsnConnector struct {
	d   driver.Driver
	dsn string
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }

func (c dsnConnector) Driver() driver.Driver { return c.d }

// TestAppClosesItsPoolFirst: an app that closes its *sql.DB before the
// library (a shutdown in that order) gets exact answers from then on, on
// the library's own connections, rows committed after the close included.
func TestAppClosesItsPoolFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := modeDB(t, "WAL", []string{"records"}, ids("seed", 2000)...)
	app := modeConn(t, path, "WAL")
	cfg := appConfig(path)
	cfg.DB, cfg.Driver = app, nil
	ix := open(t, cfg)
	insertInto(t, app, "records", ids("later", 300)...)
	probe := append(append(ids("seed", 50), ids("later", 50)...), ids("never", 50)...)
	expect(t, ix, set(ids("seed", 2000), ids("later", 300)), probe)
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	expect(t, ix, set(ids("seed", 2000), ids("later", 300)), probe)
	if ix.db.bg.Files.Current().St.AppFree() {
		t.Fatal("the app's closed pool is still taken as free")
	}
	insertInto(t, modeConn(t, path, "WAL"), "records", ids("after", 30)...)
	expect(t, ix, set(ids("seed", 2000), ids("later", 300), ids("after", 30)), append(probe, ids("after", 40)...))
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// missingWithin asks ix which of keys are missing, "never" the only one
// not stored, and fails with stuck if the answer takes longer than
// callBound.
func missingWithin(t *testing.T, ix *Index, keys []string, stuck string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		got, err := missingList(context.Background(), ix, keys)
		if err == nil && (len(got) != 1 || got[0] != "never") {
			err = fmt.Errorf("Missing = %q, want [never]", got)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(callBound):
		t.Fatal(stuck)
	}
}

// TestTempTableOnTheAppsPool: a connection of the app's pool that holds a
// TEMP table named like the source (a staging table of the server's page),
// or like the library's own tables (copies of its log and of its sources,
// one empty), does not answer for them: the library's statements there
// name every table in the main schema.
func TestTempTableOnTheAppsPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("old", 50)...)
	app := rawDB(t, path)
	app.SetMaxOpenConns(1)
	conn, err := app.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`CREATE TEMP TABLE records (id TEXT PRIMARY KEY)`, `INSERT INTO temp.records VALUES ('staged')`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	_ = conn.Close()
	ix := open(t, config{DBConfig: DBConfig{Path: path, DB: app, knobs: knobs{noFollow: true}}, Source: Source{Table: "records", Column: "id"}})
	if err := ix.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if conn, err = app.Conn(ctx); err != nil { // the pool's one connection again, with its TEMP table
		t.Fatal(err)
	}
	var logName string
	if err := conn.QueryRowContext(ctx, `SELECT name FROM main.sqlite_master WHERE name LIKE 'syncfilter_log_%'`).Scan(&logName); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TEMP TABLE ` + logName + ` AS SELECT * FROM main.` + logName,
		`INSERT INTO temp.` + logName + ` (seq, key, tag) SELECT seq + 1000000, key, tag FROM temp.` + logName,
		`CREATE TEMP TABLE syncfilter_sources AS SELECT * FROM main.syncfilter_sources WHERE 0`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	_ = conn.Close()
	for round := range 2 { // then after an app commit: the filter is behind
		got, err := ix.Missing(ctx, []string{"staged", "old-0000001", "never"})
		if err != nil || !slices.Equal(got, []bool{true, false, true}) {
			t.Fatalf("round %d: Missing = %v, %v; want [true false true]", round, got, err)
		}
		if f, err := ix.Fetched(ctx, "staged"); err != nil || f {
			t.Fatalf("round %d: Fetched(staged) = %v, %v; want false", round, f, err)
		}
		if f, err := ix.Fetched(ctx, "old-0000002"); err != nil || !f {
			t.Fatalf("round %d: Fetched(old-0000002) = %v, %v; want true", round, f, err)
		}
		if _, err := app.ExecContext(ctx, `INSERT INTO main.records (id) VALUES (?)`, fmt.Sprintf("new-%d", round)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSharedCacheOnTheAppsPool: an app pool opened with SQLite's shared
// cache (cache=shared) locks a table for its other connections while one
// of them writes it, an error no busy timeout waits out; a call made then
// answers exactly on the library's own connections (which have caches of
// their own), and so do the calls after it.
func TestSharedCacheOnTheAppsPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := modeDB(t, "WAL", []string{"records"}, ids("seed", 500)...)
	app, err := testdriver.Open(path, testdriver.App{SharedCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	app.SetMaxIdleConns(4)
	cfg := appConfig(path)
	cfg.DB, cfg.Driver = app, nil
	ix := open(t, cfg)
	page := append(append(ids("seed", 20), ids("later", 20)...), ids("never", 20)...)
	insertInto(t, app, "records", ids("later", 20)...)
	fetched := set(ids("seed", 500), ids("later", 20))
	expect(t, ix, fetched, page) // on the app's pool, nobody writing
	switch testdriver.Name() {
	case "modernc":
		// modernc waits for another connection's table lock (unlock
		// notify), without a timeout and whatever ctx says: the call
		// below would wait for the transaction this goroutine holds.
		t.Skip("modernc.org/sqlite waits out a shared cache's table locks without a timeout")
	case "ncruces":
		t.Skip("ncruces/go-sqlite3 is built without shared cache (SQLITE_OMIT_SHARED_CACHE): cache=shared opens a private one")
	}
	// Two connections of the pool, both given back: one inside a write
	// transaction left open (its tables locked for the other), the other,
	// given back last, the one database/sql lends next. The app uses
	// none of its connections, so the library may.
	conns := make([]*sql.Conn, 2)
	for i := range conns {
		if conns[i], err = app.Conn(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conns[0].ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	if _, err := conns[0].ExecContext(ctx, `INSERT INTO records (id) VALUES ('uncommitted')`); err != nil {
		t.Fatal(err)
	}
	_ = conns[0].Close()
	_ = conns[1].Close()
	st := ix.db.bg.Files.Current().St
	if !st.AppFree() {
		t.Fatal("the app's pool is not free to lend: the library would not use it")
	}
	for round := range 2 {
		// Fetched first: a single key's lookup is the first statement to
		// meet the lock.
		for _, k := range []string{ids("seed", 5)[3], ids("later", 5)[4], "never-5"} {
			if ok, err := ix.Fetched(ctx, k); err != nil || ok != fetched[k] {
				t.Fatalf("round %d: Fetched(%q) = %v, %v; want %v", round, k, ok, err, fetched[k])
			}
		}
		got, err := ix.Missing(ctx, append(page, "uncommitted"))
		if err != nil {
			t.Fatalf("round %d: Missing while the app writes on its shared cache: %v", round, err)
		}
		for i, k := range append(page, "uncommitted") {
			if got[i] != !fetched[k] {
				t.Fatalf("round %d: Missing(%q) = %v, want %v", round, k, got[i], !fetched[k])
			}
		}
		if s := app.Stats(); st.AppFree() || s.InUse != 0 || s.Idle == 0 {
			t.Fatalf("round %d: the app's pool reported a table lock and is still used (%+v)", round, s)
		}
	}
	// The transaction is on one of the two connections: commit it there.
	for i := range conns {
		if conns[i], err = app.Conn(ctx); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
	}
	committed := 0
	for _, c := range conns {
		if _, err := c.ExecContext(ctx, `COMMIT`); err == nil {
			committed++
		}
	}
	if committed != 1 {
		t.Fatalf("%d connections committed, want the one inside the transaction", committed)
	}
	fetched["uncommitted"] = true
	expect(t, ix, fetched, append(page, "uncommitted"))
}

// TestIndexOpensWhileTheAppHoldsItsPool: an index opened while the app
// holds every open connection of its pool (inside a transaction) makes
// the pool open none: the probe Open prepares on the app's pool is
// prepared only on an idle connection. The first page is exact.
func TestIndexOpensWhileTheAppHoldsItsPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := modeDB(t, "WAL", []string{"records"}, ids("seed", 500)...)
	if err := open(t, appConfig(path)).Close(ctx); err != nil { // attached, scanned, a snapshot saved
		t.Fatal(err)
	}
	app := modeConn(t, path, "WAL")
	cfg := appConfig(path)
	cfg.DB, cfg.Driver = app, nil
	db, err := OpenDB(ctx, cfg.DBConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close(ctx) })
	tx, err := app.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	open := app.Stats().OpenConnections
	ix, err := db.Index(ctx, cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	if n := app.Stats().OpenConnections; n != open {
		t.Fatalf("opening the index made the app's pool open %d connections (%d before)", n, open)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	expect(t, ix, set(ids("seed", 500)), append(ids("seed", 20), ids("never", 20)...))
}

// TestAppsPoolGrowsByOneAtMost: an app with an unlimited pool and one
// warm connection runs DDL and inserts on it from one goroutine while
// four others call Missing. The library runs a statement on the app's
// pool only while the app uses none of its connections, one at a time:
// the pool grows by one connection at most (when the app takes its idle
// connection between the library's look and its statement). Every answer
// stays exact. How many of the app's statements failed (SQLite's own
// hazard once its pool has two connections) is logged.
func TestAppsPoolGrowsByOneAtMost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := driftDB(t, "WAL", ids("seed", 100))
	app := modeConn(t, path, "WAL")
	needDropColumn(t, app)
	app.SetMaxOpenConns(0)
	app.SetMaxIdleConns(4)
	cfg := appConfig(path)
	cfg.DB, cfg.Driver = app, nil
	var onApp atomic.Int64
	cfg.knobs.catalogRead = func(app bool) {
		if app {
			onApp.Add(1)
		}
	}
	ix := open(t, cfg)
	waitServing(t, ix)
	// The app idle: a call after its DDL uses the app's pool (the catalog
	// read there says so).
	mustExec(t, app, `ALTER TABLE records ADD COLUMN c TEXT`)
	if _, err := ix.Missing(ctx, ids("seed", 3)); err != nil {
		t.Fatal(err)
	}
	mustExec(t, app, `ALTER TABLE records DROP COLUMN c`)
	if reportsAutocommit(t, app) && onApp.Load() == 0 {
		t.Fatal("the call after DDL did not use the app's pool")
	}
	var most atomic.Int64
	note := func() {
		n := int64(app.Stats().OpenConnections)
		for cur := most.Load(); n > cur && !most.CompareAndSwap(cur, n); cur = most.Load() {
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			page := slices.Concat(ids("seed", 3), ids(fmt.Sprint("never", g), 3))
			for !stop.Load() {
				missing, err := ix.Missing(context.Background(), page)
				note()
				if err == nil && (slices.Contains(missing[:3], true) || slices.Contains(missing[3:], false)) {
					err = fmt.Errorf("Missing(%v) = %v", page, missing)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	failed := 0
	for i := range 200 {
		for _, q := range []string{`ALTER TABLE records ADD COLUMN c TEXT`, `INSERT INTO records (id) VALUES ('x` + fmt.Sprint(i) + `')`, `ALTER TABLE records DROP COLUMN c`} {
			if _, err := app.Exec(q); err != nil {
				failed++ // SQLite's own hazard once the pool has two connections
			}
			note()
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := most.Load(); n > 2 {
		t.Errorf("the app's pool grew to %d connections (%d of the app's statements failed)", n, failed)
	}
	t.Logf("the app's pool at most %d connections; %d of its 600 statements failed", most.Load(), failed)
}
