package store

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/normalize"
)

// testDB creates a database at a new path with the given schema, through a
// plain connection as the app would, and opens it as the library does.
func testDB(t testing.TB, schema ...string) (*DB, *sql.DB) {
	return testDBWith(t, Knobs{}, schema...)
}

// testDBWith is testDB with the library's sizes set to knobs.
func testDBWith(t testing.TB, knobs Knobs, schema ...string) (*DB, *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.db")
	app, err := testdriver.Open(path, testdriver.App{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	for _, q := range schema {
		if _, err := app.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return openStore(t, path, knobs), app
}

// openStore opens path as the library does, with the tests' driver.
func openStore(t testing.TB, path string, knobs Knobs) *DB {
	t.Helper()
	d, err := NewDriver(testdriver.Driver())
	if err != nil {
		t.Fatal(err)
	}
	knobs.PlainSQL = knobs.PlainSQL || os.Getenv("SYNCFILTER_TEST_PLAIN") != ""
	db, err := Open(context.Background(), path, Options{Driver: d, Readers: 2, BusyTimeout: 10 * time.Second, Knobs: knobs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// skipBelow skips t when the tests' SQLite is older than version (a
// statement the test runs needs it; the library's do not).
func skipBelow(t testing.TB, version string) {
	t.Helper()
	q, err := testdriver.Open(filepath.Join(t.TempDir(), "version.db"), testdriver.App{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var v string
	if err := q.QueryRow(`SELECT sqlite_version()`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if versionNumber(v) < versionNumber(version) {
		t.Skipf("SQLite %s: the test needs %s", v, version)
	}
}

// attach resolves and attaches table.column.
func attach(t testing.TB, db *DB, table, column string, allowUnindexed bool) *Source {
	t.Helper()
	s, _, err := db.Attach(context.Background(), Want{Table: table, Column: column, Policy: normalize.Policy, AllowUnindexed: allowUnindexed})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// distinct returns the sorted distinct keys.
func distinct(keys []string) []string {
	out := slices.Clone(keys)
	slices.Sort(out)
	return slices.Compact(out)
}
