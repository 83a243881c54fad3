// Package testdriver gives the tests the SQLite driver they run with, for
// the library and for the app's own connections alike: one SQLite copy in
// the test process, as in an app. SYNCFILTER_TEST_DRIVER names it
// (mattn, modernc or ncruces); the default is mattn where the build has
// it (cgo, without the syncfilter_nomattn tag), modernc otherwise. The
// tests of a package run with one driver per `go test`; the Makefile's
// drivers target runs them with each.
//
// mattn/go-sqlite3 and ncruces/go-sqlite3 both register the database/sql
// name "sqlite3", so no build holds both: builds with mattn hold mattn
// and modernc, builds without it (CGO_ENABLED=0 or -tags
// syncfilter_nomattn) modernc, and ncruces when built as the Makefile's
// ncruces runs build them (ncruces.go says why and how).
package testdriver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
)

// registered holds the drivers of this build, by name, and how each
// restores a backup into an open database.
var (
	registered = map[string]driver.Driver{}
	restorers  = map[string]func(dst any, src string) error{}
)

// dsnStyle says how a driver spells the app's options in a DSN.
var dsnStyle = map[string]string{}

// collated makes, by driver name, a driver value whose every connection
// has an app-defined collation (drivers that can: mattn, modernc).
var collated = map[string]func(name string, cmp func(a, b string) int) driver.Driver{}

// WithCollation returns the tests' driver with the collation name (cmp)
// defined on every connection it opens, as an app that defines one does;
// false if the driver has no way to (ncruces defines collations on the
// connections of one handle, not of the driver).
func WithCollation(name string, cmp func(a, b string) int) (driver.Driver, bool) {
	f, ok := collated[Name()]
	if !ok {
		return nil, false
	}
	return f(name, cmp), true
}

func register(name, style string, d driver.Driver, restore func(dst any, src string) error) {
	registered[name] = d
	dsnStyle[name] = style
	restorers[name] = restore
}

// Restore copies the database at path src over the database dst is
// connected to, with SQLite's backup API (as `sqlite3 app.db ".restore
// backup.db"` does): dst's file stays, its content is replaced. dst must
// be a connection of the tests' driver.
func Restore(ctx context.Context, dst *sql.Conn, src string) error {
	return dst.Raw(func(d any) error { return restorers[Name()](d, src) })
}

// Names lists the drivers of this build.
func Names() []string {
	var out []string
	for n := range registered {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Name is the driver the tests run with.
func Name() string {
	if n := os.Getenv("SYNCFILTER_TEST_DRIVER"); n != "" {
		if _, ok := registered[n]; !ok {
			panic(fmt.Sprintf("SYNCFILTER_TEST_DRIVER=%s: this build has %v", n, Names()))
		}
		return n
	}
	if _, ok := registered["mattn"]; ok {
		return "mattn"
	}
	return "modernc"
}

// Driver is the driver the tests run with.
func Driver() driver.Driver { return registered[Name()] }

// Get returns a driver of this build by name, and whether it has it.
func Get(name string) (driver.Driver, bool) {
	d, ok := registered[name]
	return d, ok
}

// App are the options of an app's connection.
type App struct {
	JournalMode string        // "" leaves the database's
	BusyTimeout time.Duration // 0: 10s
	ReadOnly    bool
	Synchronous string     // "" leaves SQLite's default
	SharedCache bool       // cache=shared: the pool's connections share one cache, and lock each other's tables
	Params      url.Values // more URI parameters: an encrypted database's key
}

// DSN returns the URI an app on driver name opens path with.
func DSN(name, path string, o App) string {
	if o.BusyTimeout == 0 {
		o.BusyTimeout = 10 * time.Second
	}
	q := url.Values{}
	if o.ReadOnly {
		q.Set("mode", "ro")
	}
	if o.SharedCache {
		q.Set("cache", "shared")
	}
	ms := fmt.Sprint(o.BusyTimeout.Milliseconds())
	switch dsnStyle[name] {
	case "mattn":
		q.Set("_busy_timeout", ms)
		if o.JournalMode != "" {
			q.Set("_journal_mode", o.JournalMode)
		}
		if o.Synchronous != "" {
			q.Set("_synchronous", o.Synchronous)
		}
	default: // _pragma=name(value), as modernc and ncruces spell it
		p := []string{"busy_timeout(" + ms + ")"}
		if o.JournalMode != "" {
			p = append(p, "journal_mode("+o.JournalMode+")")
		}
		if o.Synchronous != "" {
			p = append(p, "synchronous("+o.Synchronous+")")
		}
		q["_pragma"] = p
	}
	for k, vs := range o.Params {
		q[k] = append(q[k], vs...)
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + strings.ReplaceAll(q.Encode(), "+", "%20")
}

// Open opens path as an app on the tests' driver would, with database/sql.
func Open(path string, o App) (*sql.DB, error) {
	return OpenWith(Name(), path, o)
}

// OpenWith opens path as an app on driver name would.
func OpenWith(name, path string, o App) (*sql.DB, error) {
	d, ok := registered[name]
	if !ok {
		return nil, fmt.Errorf("driver %s not in this build (%v)", name, Names())
	}
	c, err := connector(d, DSN(name, path, o))
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// OpenDSN opens dsn with the tests' driver, as an app that writes its own
// DSN does.
func OpenDSN(dsn string) (*sql.DB, error) {
	c, err := connector(Driver(), dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

func connector(d driver.Driver, dsn string) (driver.Connector, error) {
	if dc, ok := d.(driver.DriverContext); ok {
		return dc.OpenConnector(dsn)
	}
	return dsnConnector{d, dsn}, nil
}

type dsnConnector struct {
	d   driver.Driver
	dsn string
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }

func (c dsnConnector) Driver() driver.Driver { return c.d }
