package store

import (
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
	t.Parallel()
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
		if !errors.Is(err, ErrUnsupportedDriver) {
			t.Fatalf("no default: %v, want ErrUnsupportedDriver", err)
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
