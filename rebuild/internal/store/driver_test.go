package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// TestNewDriver: every driver of the build is taken; a driver the library
// does not know is refused naming its type; without a driver, the default
// is refused when the program links a second SQLite (this test binary
// links two), or missing when the build has none.
func TestNewDriver(t *testing.T) {
	for _, name := range testdriver.Names() {
		d, _ := testdriver.Get(name)
		got, err := NewDriver(d)
		if err != nil || got.Name == "" {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if _, err := NewDriver(fakeDriver{}); !errors.Is(err, ErrUnsupportedDriver) {
		t.Fatalf("an unknown driver: %v, want ErrUnsupportedDriver", err)
	}
	_, err := NewDriver(nil)
	switch {
	case defaultDriver() == nil:
		if !errors.Is(err, ErrNoDriver) {
			t.Fatalf("no default: %v, want ErrNoDriver", err)
		}
	case !errors.Is(err, ErrSecondSQLite):
		t.Fatalf("the default beside %v: %v, want ErrSecondSQLite", otherCopies(), err)
	}
	// A test binary of a library package records no modules in its build
	// information: here the copy is seen by its database/sql driver.
	if others := otherCopies(); !slices.ContainsFunc(others, func(o string) bool { return strings.HasPrefix(o, "modernc.org/sqlite") }) {
		t.Fatalf("other copies %q: modernc.org/sqlite, which this binary links, not among them", others)
	}
}

type fakeDriver struct{}

func (fakeDriver) Open(string) (driver.Conn, error) { return nil, errors.New("fake") }

// TestScanSpellingsFindsKeysWithNUL: a stored key with a NUL before its
// first non-ASCII character is handed over (GLOB would stop at the NUL),
// and ASCII keys are not.
func TestScanSpellingsFindsKeysWithNUL(t *testing.T) {
	ctx := context.Background()
	db, app := testDB(t, `CREATE TABLE t (id TEXT PRIMARY KEY)`)
	want := []string{"nul\x00x/Sa\u0303o", "\x00\u00e9", "caf\u00e9", "a\x01\x1f\x7f\u0301", "\xed\xa0\x80"}
	for _, k := range append(slices.Clone(want), "plain", "ctl\x01\x1f\x7f") {
		if _, err := app.Exec(`INSERT INTO t (id) VALUES (?)`, k); err != nil {
			t.Fatal(err)
		}
	}
	s := attach(t, db, "t", "id", false)
	c, err := db.Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Release(c)
	var got []string
	if err := db.ScanSpellings(ctx, s, func(k string) error { got = append(got, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(distinct(got), distinct(want)) {
		t.Fatalf("got %+q, want %+q", distinct(got), distinct(want))
	}
}
