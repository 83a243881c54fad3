package syncbench

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver
)

// A Driver is the SQLite copy the app links: the name it registered with
// database/sql and its module. The app's pool, the baselines and the
// library must all use the same one: two copies of SQLite in one process
// do not see each other's POSIX locks and corrupt the file ("How To
// Corrupt An SQLite Database", 2.2.1).
type Driver struct {
	Name    string // as the -driver flag says it
	SQLName string // as registered with database/sql
	Module  string // the Go module that ships it
}

// Mattn is github.com/mattn/go-sqlite3 (cgo), the library's default.
var Mattn = Driver{Name: "mattn", SQLName: "sqlite3", Module: "github.com/mattn/go-sqlite3"}

// Modernc is modernc.org/sqlite (SQLite translated to Go, no cgo). It is
// linked only into binaries built with -tags modernc (driver_modernc.go):
// a second SQLite copy linked into every benchmark would be one more copy
// for the library to refuse once it checks for them.
var Modernc = Driver{Name: "modernc", SQLName: "sqlite", Module: "modernc.org/sqlite"}

// drivers are the drivers linked into this binary.
var drivers = []Driver{Mattn}

// DriverNamed returns the driver called name, if this binary links it.
func DriverNamed(name string) (Driver, error) {
	for _, d := range drivers {
		if d.Name == name {
			return d, nil
		}
	}
	if name == Modernc.Name {
		return Driver{}, fmt.Errorf("driver %s: this binary was built without it: build with -tags modernc", name)
	}
	names := make([]string, len(drivers))
	for i, d := range drivers {
		names[i] = d.Name
	}
	return Driver{}, fmt.Errorf("driver %q: want one of %s", name, strings.Join(names, ", "))
}

// Version returns the driver module's version in this binary, or "".
func (d Driver) Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	i := slices.IndexFunc(bi.Deps, func(m *debug.Module) bool { return m.Path == d.Module })
	if i < 0 {
		return ""
	}
	return bi.Deps[i].Version
}

// SQLDriver returns the driver registered under d.SQLName: the value to
// hand a library that takes the app's driver.
func (d Driver) SQLDriver() (driver.Driver, error) {
	db, err := sql.Open(d.SQLName, "") // connects to nothing
	if err != nil {
		return nil, fmt.Errorf("driver %s: %w", d.Name, err)
	}
	defer db.Close()
	return db.Driver(), nil
}
