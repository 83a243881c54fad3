package rebuild

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/snapshot"
)

// appDB creates a SQLite file with an app table, records(id TEXT PRIMARY
// KEY, body TEXT), holding the given ids, and returns its path.
func init() { forcePlainSQL = os.Getenv("SYNCFILTER_TEST_PLAIN") != "" }

func appDB(t testing.TB, ids ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.db")
	db := rawDB(t, path)
	defer db.Close()
	mustExec(t, db, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`)
	insertIDs(t, db, ids...)
	return path
}

// rawDB opens path with plain database/sql, as another part of the app (or
// another tool) would.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := testdriver.Open(path, testdriver.App{JournalMode: "WAL", BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func mustExec(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// needDropColumn skips t on an SQLite without ALTER TABLE … DROP COLUMN
// (before 3.35: SQLCipher 4.4's 3.33), which t uses to stage a database.
func needDropColumn(t testing.TB, db *sql.DB) {
	t.Helper()
	var v string
	if err := db.QueryRow(`SELECT sqlite_version()`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil || major == 3 && minor < 35 {
		t.Skipf("SQLite %s has no DROP COLUMN, which the test stages a database with", v)
	}
}

func insertIDs(t testing.TB, db *sql.DB, ids ...string) {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := tx.Exec(`INSERT INTO records (id, body) VALUES (?, 'x')`, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%07d", prefix, i)
	}
	return out
}

// config is one collection's configuration, the database's and the
// source's, as the tests pass them around.
type config struct {
	DBConfig
	Source
}

// open opens an index and waits until its filter is ready (or its
// background work has failed: the test fails), as an app that needs the
// filter before its first call does (Wait).
func open(t testing.TB, cfg config) *Index {
	t.Helper()
	ix, err := Open(context.Background(), cfg.DBConfig, cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close(context.Background()) })
	if err := ix.Wait(context.Background()); err != nil && !errors.Is(err, ErrNotServing) {
		t.Fatal(err)
	}
	return ix
}

func appConfig(path string) config {
	return config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb"}}
}

// firstCall makes ix's first call: the first scan of a table the library
// never attached starts once a call is answered (or at Wait).
func firstCall(t testing.TB, ix *Index) {
	t.Helper()
	if _, err := ix.Fetched(context.Background(), "first-call"); err != nil {
		t.Fatal(err)
	}
}

// waitServing waits for a background rebuild to publish a filter.
func waitServing(t testing.TB, ix *Index) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ix.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for !stats(ix).Serving {
		select {
		case <-ctx.Done():
			t.Fatal("no filter serving after 30s")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func set(keys ...[]string) map[string]bool {
	m := map[string]bool{}
	for _, ks := range keys {
		for _, k := range ks {
			m[k] = true
		}
	}
	return m
}

// missingList returns the keys of page that Missing answers missing, in
// page order (a key the page repeats, as often as it repeats it).
func missingList(ctx context.Context, ix *Index, page []string) ([]string, error) {
	ans, err := ix.Missing(ctx, page)
	if ans == nil {
		return nil, err
	}
	if len(ans) != len(page) {
		return nil, fmt.Errorf("Missing answered %d positions of %d", len(ans), len(page))
	}
	var out []string
	for i, m := range ans {
		if m {
			out = append(out, page[i])
		}
	}
	return out, err
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// modeDB creates a database in the given journal mode ("wal" or "delete")
// with the app tables named, each (id TEXT PRIMARY KEY, body TEXT) and
// holding ids.
func modeDB(t testing.TB, mode string, tables []string, ids ...string) string {
	t.Helper()
	return modeDBWith(t, mode, nil, tables, ids...)
}

// modeDBWith is modeDB with more URI parameters (an encryption key).
func modeDBWith(t testing.TB, mode string, params url.Values, tables []string, ids ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.db")
	db := modeConnWith(t, path, mode, params)
	defer db.Close()
	for _, tb := range tables {
		mustExec(t, db, `CREATE TABLE `+tb+` (id TEXT PRIMARY KEY, body TEXT)`)
		insertInto(t, db, tb, ids...)
	}
	return path
}

// modeConn opens the app's own connection in its journal mode.
func modeConn(t testing.TB, path, mode string) *sql.DB {
	t.Helper()
	return modeConnWith(t, path, mode, nil)
}

// modeConnWith is modeConn with more URI parameters (an encryption key).
func modeConnWith(t testing.TB, path, mode string, params url.Values) *sql.DB {
	t.Helper()
	db, err := testdriver.Open(path, testdriver.App{JournalMode: mode, BusyTimeout: 10 * time.Second, Params: params})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func insertInto(t testing.TB, db *sql.DB, table string, ids ...string) {
	t.Helper()
	if err := tryInsert(db, table, ids...); err != nil {
		t.Fatal(err)
	}
}

// tryInsert commits ids into table in one transaction.
func tryInsert(db *sql.DB, table string, ids ...string) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := tx.Exec(`INSERT INTO `+table+` (id, body) VALUES (?, 'x')`, id); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("insert %+q: %w", id, err)
		}
	}
	return tx.Commit()
}

// driftDB creates app.db in mode (set by the DSN of every connection)
// with records(id TEXT PRIMARY KEY, body TEXT) holding seed.
func driftDB(t *testing.T, mode string, seed []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.db")
	db := modeConn(t, path, mode)
	mustExec(t, db, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`)
	insertIDs(t, db, seed...)
	_ = db.Close()
	return path
}

// plainDB opens path as an app that never chose a journal mode would.
func plainDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := testdriver.Open(path, testdriver.App{BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// collectionsDB creates a database with n tables, coll0..coll<n-1>, each
// holding rows ids.
func collectionsDB(t testing.TB, n, rows int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.db")
	db := rawDB(t, path)
	defer db.Close() // no connection of the test's outlives the setup: descriptors count the library's
	for i := range n {
		mustExec(t, db, fmt.Sprintf(`CREATE TABLE coll%d (id TEXT PRIMARY KEY, body TEXT)`, i))
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids(fmt.Sprintf("c%d", i), rows) {
			if _, err := tx.Exec(fmt.Sprintf(`INSERT INTO coll%d (id) VALUES (?)`, i), id); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// checkpoint folds the WAL into the database file, so that copying the file
// copies the database.
func checkpoint(path string) error {
	db, err := testdriver.Open(path, testdriver.App{BusyTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

// attachOnly attaches the records table (an index opened with the first
// scan, then closed) and leaves no snapshot.
func attachOnly(ctx context.Context, path string) error {
	ix, err := Open(ctx, DBConfig{Path: path, Driver: appConfig(path).Driver}, Source{Table: "records", Column: "id"})
	if err != nil {
		return err
	}
	if err := ix.Wait(ctx); err != nil {
		return err
	}
	return ix.Close(ctx)
}

// waitFor polls cond (no timing assertion: a generous bound only turns a
// hang into a failure).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 60s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readOnlyIndex opens the source records.id of path read-only, after an
// app's open and close attached it (attached) and saved its snapshot
// (snapshot), and checks that Stats says so.
func readOnlyIndex(t *testing.T, path string, attached, snapshot bool) *Index {
	t.Helper()
	cfg := config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id"}}
	if snapshot {
		cfg.Snapshot = path + ".sfb"
	}
	if attached {
		w := open(t, cfg)
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	cfg.ReadOnly = true
	ix := open(t, cfg)
	if st := stats(ix); st.Attached != attached || st.Serving != snapshot {
		t.Fatalf("attached %v, serving %v", st.Attached, st.Serving)
	}
	return ix
}

// readSnap reads the snapshot at snap with the key of the positions that
// the database at path holds for the source of the file's dataset id.
func readSnap(t testing.TB, path, snap string) (*snapshot.Snapshot, error) {
	t.Helper()
	return snapshot.ReadFile(snap, snapshot.WithKey(dbKey(t, path, snap)))
}

// dbKey returns the key the database at path holds for the source of the
// snapshot at snap (by its dataset id); zero if it holds none.
func dbKey(t testing.TB, path, snap string) (key [32]byte) {
	t.Helper()
	h, err := snapshot.ReadHeader(snap)
	if err != nil {
		return key // the read with the zero key says what is wrong
	}
	db, err := testdriver.Open(path, testdriver.App{BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var raw []byte
	if err := db.QueryRow(`SELECT positions_key FROM syncfilter_sources WHERE dataset_id = ?`, h.DatasetID[:]).Scan(&raw); err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	copy(key[:], raw)
	return key
}
