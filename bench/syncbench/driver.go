package syncbench

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
)

// A Driver is the SQLite copy the app links: the name it registered with
// database/sql and its module. The app's pool, the baselines and the
// library must all use the same one: two copies of SQLite in one process
// do not see each other's POSIX locks and corrupt the file ("How To
// Corrupt An SQLite Database", 2.2.1).
//
// Which drivers a binary links is chosen when it is built, as an app
// chooses (driver_*.go): mattn with cgo (the default); modernc beside it
// with -tags modernc; ncruces, which registers the same database/sql name
// as mattn, in place of it, with CGO_ENABLED=0 or -tags
// syncfilter_nomattn (which also leaves mattn out of the library).
type Driver struct {
	Name    string // as the -driver flag says it
	SQLName string // as registered with database/sql
	Module  string // the Go module that ships it
	// pragmas: the driver reads connection settings only as
	// _pragma=name(value) (ncruces), not as mattn's _busy_timeout,
	// _journal_mode, _sync and _cache_size (which modernc reads too).
	pragmas bool
	build   string // how to build a binary that links it
	// Params are the connection parameters every connection to the
	// database carries (the app's DSNs, the library's ConnParams): the
	// key of an encrypted database.
	Params url.Values
}

// Mattn is github.com/mattn/go-sqlite3 (cgo), the library's default.
var Mattn = Driver{Name: "mattn", SQLName: "sqlite3", Module: "github.com/mattn/go-sqlite3",
	build: "build with cgo and without -tags syncfilter_nomattn"}

// Modernc is modernc.org/sqlite (SQLite translated to Go, no cgo). It is
// linked only into binaries built with -tags modernc (driver_modernc.go):
// a second SQLite copy linked into every benchmark would be one more copy
// for the library to refuse.
var Modernc = Driver{Name: "modernc", SQLName: "sqlite", Module: "modernc.org/sqlite",
	build: "build with -tags modernc"}

// Ncruces is github.com/ncruces/go-sqlite3 (SQLite compiled to wasm and
// translated to Go, no cgo). It registers "sqlite3", as mattn does, so a
// binary links one or the other (driver_ncruces.go).
var Ncruces = Driver{Name: "ncruces", SQLName: "sqlite3", Module: "github.com/ncruces/go-sqlite3", pragmas: true,
	build: "build with CGO_ENABLED=0 or -tags syncfilter_nomattn"}

// Sqlcipher is github.com/mutecomm/go-sqlcipher/v4 (SQLCipher 4.4.2 on
// SQLite 3.33.0, cgo), every database encrypted with a raw 256-bit key
// (benchKey). A fork of mattn: a binary links one or the other
// (driver_sqlcipher.go).
var Sqlcipher = Driver{Name: "sqlcipher", SQLName: "sqlite3", Module: "github.com/mutecomm/go-sqlcipher/v4",
	build: "build with -tags syncfilter_nomattn,syncfilter_sqlcipher", Params: url.Values{"_pragma_key": {"x'" + benchKey + "'"}}}

// NcrucesAdiantum is Ncruces with every database encrypted by its
// adiantum VFS, the key (benchKey) in the URI (driver_adiantum.go).
var NcrucesAdiantum = Driver{Name: "ncruces-adiantum", SQLName: "sqlite3", Module: "github.com/ncruces/go-sqlite3", pragmas: true,
	build: "build with -tags syncfilter_adiantum and CGO_ENABLED=0 or -tags syncfilter_nomattn", Params: url.Values{"vfs": {"adiantum"}, "hexkey": {benchKey}}}

// benchKey is the key of the benchmarks' encrypted databases.
const benchKey = "6d1f0c2b9a8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a392817065f4e"

// drivers are the drivers linked into this binary.
var drivers []Driver

// DriverNamed returns the driver called name, if this binary links it.
func DriverNamed(name string) (Driver, error) {
	for _, d := range drivers {
		if d.Name == name {
			return d, nil
		}
	}
	for _, d := range []Driver{Mattn, Modernc, Ncruces, NcrucesAdiantum, Sqlcipher} {
		if d.Name == name {
			return Driver{}, fmt.Errorf("driver %s: this binary was built without it: %s", name, d.build)
		}
	}
	names := make([]string, len(drivers))
	for i, d := range drivers {
		names[i] = d.Name
	}
	return Driver{}, fmt.Errorf("driver %q: want one of %s", name, strings.Join(names, ", "))
}

// DefaultDriver is the driver of the harness's own connections (base
// tables, the loop benchmarks' baselines) and the -driver flags'
// default: mattn when the binary links it, else ncruces.
func DefaultDriver() Driver {
	for _, name := range []string{Mattn.Name, Ncruces.Name, NcrucesAdiantum.Name, Sqlcipher.Name, Modernc.Name} {
		if d, err := DriverNamed(name); err == nil {
			return d
		}
	}
	panic("syncbench: no SQLite driver linked")
}

// DSN builds the URI of path with opts, options spelled as mattn spells
// them (_busy_timeout, _journal_mode, _sync, _cache_size, _txlock),
// translated for a driver that reads only _pragma.
func (d Driver) DSN(path, opts string) string {
	dsn := d.dsn(path, opts)
	if len(d.Params) > 0 {
		if !strings.HasSuffix(dsn, "?") {
			dsn += "&"
		}
		dsn += d.Params.Encode()
	}
	return dsn
}

func (d Driver) dsn(path, opts string) string {
	if !d.pragmas || opts == "" {
		return DSN(path, opts)
	}
	q, err := url.ParseQuery(opts)
	if err != nil {
		panic(fmt.Sprintf("syncbench: options %q: %v", opts, err))
	}
	out := url.Values{}
	// busy_timeout first: the PRAGMAs after it (journal_mode) may wait for a lock.
	for _, o := range []struct{ key, pragma string }{
		{"_busy_timeout", "busy_timeout"}, {"_journal_mode", "journal_mode"},
		{"_sync", "synchronous"}, {"_synchronous", "synchronous"}, {"_cache_size", "cache_size"},
	} {
		if v := q.Get(o.key); v != "" {
			out.Add("_pragma", o.pragma+"("+v+")")
			q.Del(o.key)
		}
	}
	for k, vs := range q {
		if k != "_txlock" {
			panic(fmt.Sprintf("syncbench: option %s not translated for %s", k, d.Name))
		}
		out[k] = vs
	}
	return DSN(path, out.Encode())
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
