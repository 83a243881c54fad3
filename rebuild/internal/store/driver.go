package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// The library opens the app's database only through the SQLite the app
// links: two copies of SQLite in one process do not see each other's
// POSIX locks, and closing a file in one drops the other's locks
// (sqlite.org/howtocorrupt.html, 2.2.1), which loses committed rows and
// corrupts the file. The app names its driver (rebuild.DBConfig.Driver);
// without one, the library takes github.com/mattn/go-sqlite3 when the
// build has it (default_mattn.go) and no other SQLite is linked.
//
// What the library needs of a driver is standard database/sql/driver
// (prepared statements whose queries take a context, which interrupts
// them), SQLite's URI file names (mode=ro, mode=rw) and SQLite's result
// codes on its errors (package internal/sqlitecode). The supported
// drivers are the three it is tested with; their quirks are handled
// here: ncruces turns a text value that looks like a time into a
// time.Time, so every key travels inside a JSON string, never as a bare
// column value.

// Driver is the SQLite driver the library opens connections with.
type Driver struct {
	drv  driver.Driver
	Name string // the driver's package, for messages
	// columnsFirst: the driver's rows must be asked for their columns
	// before the first row, as database/sql always does (ncruces reads
	// its value conversions from them).
	columnsFirst bool
}

// Supported drivers, by the package path of their driver type.
var supported = map[string]string{
	"github.com/mattn/go-sqlite3":          "github.com/mattn/go-sqlite3",
	"modernc.org/sqlite":                   "modernc.org/sqlite",
	"github.com/ncruces/go-sqlite3/driver": "github.com/ncruces/go-sqlite3",
}

// NewDriver returns the driver to open the database with: d, the app's,
// or, if d is nil, the default (mattn/go-sqlite3) when the build has it
// and links no other SQLite. Errors: ErrUnsupportedDriver, ErrSecondSQLite,
// ErrUnsupportedDriver.
func NewDriver(d driver.Driver) (*Driver, error) {
	if d == nil {
		def := defaultDriver()
		if def == nil {
			return nil, fmt.Errorf("choose SQLite driver: none given, and this build has no default (github.com/mattn/go-sqlite3 needs cgo and no syncfilter_nomattn tag); "+
				"pass the driver your app uses, such as DBConfig{Driver: &sqlite.Driver{}} for modernc.org/sqlite or DBConfig{Driver: appDB.Driver()}: %w", ErrUnsupportedDriver)
		}
		if others := otherCopies(); len(others) > 0 {
			return nil, fmt.Errorf("choose SQLite driver: none given, and this program links SQLite more than once (github.com/mattn/go-sqlite3, the default, and %s). "+
				"Two copies of SQLite in one process do not see each other's file locks, and closing a file in one drops the other's: committed rows vanish and the database is corrupted (sqlite.org/howtocorrupt.html, 2.2.1). "+
				"Pass the driver your app opens this database with, such as DBConfig{Driver: &sqlite.Driver{}} for modernc.org/sqlite, DBConfig{Driver: &driver.SQLite{}} for ncruces, or DBConfig{Driver: appDB.Driver()}: %w",
				strings.Join(others, ", "), ErrSecondSQLite)
		}
		d = def
	}
	name, ok := supported[pkgPath(d)]
	if !ok {
		return nil, fmt.Errorf("choose SQLite driver: %T is not one the library supports (github.com/mattn/go-sqlite3, modernc.org/sqlite, github.com/ncruces/go-sqlite3/driver); "+
			"if it wraps one of them, pass the driver it wraps: %w", d, ErrUnsupportedDriver)
	}
	return &Driver{drv: d, Name: name, columnsFirst: name == "github.com/ncruces/go-sqlite3"}, nil
}

// pkgPath is the package of d's type (through pointers).
func pkgPath(d any) string {
	t := reflect.TypeOf(d)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath()
}

// pool opens a database/sql pool of connections to path in the URI mode
// mode (ro, rw, rwc), whose busy timeout is busy from the moment they
// open (a driver may run statements while it opens a connection: mattn
// sets PRAGMA synchronous, which reads the schema and waits for locks).
func (d *Driver) pool(path, mode string, busy time.Duration) (*sql.DB, error) {
	ms := strconv.FormatInt(busy.Milliseconds(), 10)
	// cache=private: a cache of their own whatever the process enabled
	// (sqlite3_enable_shared_cache), so that the library's reads never
	// lock a table against the app's writers.
	opts := "mode=" + mode + "&cache=private"
	switch d.Name {
	case "github.com/mattn/go-sqlite3":
		// mattn sets synchronous=NORMAL on every connection unless told:
		// the library's writes keep SQLite's default, FULL.
		opts += "&_busy_timeout=" + ms + "&_synchronous=FULL"
	default: // modernc and ncruces run the PRAGMAs a DSN lists
		opts += "&_pragma=busy_timeout(" + ms + ")"
	}
	uri := URI(path, opts)
	c := &connector{d: d, uri: uri}
	if dc, ok := d.drv.(driver.DriverContext); ok {
		inner, err := dc.OpenConnector(uri)
		if err != nil {
			return nil, fmt.Errorf("open %s with %s: %w", path, d.Name, err)
		}
		c.inner = inner
	}
	return sql.OpenDB(c), nil
}

// connector opens connections through the app's driver.
type connector struct {
	d     *Driver
	uri   string
	inner driver.Connector // when the driver has connectors
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	if c.inner != nil {
		return c.inner.Connect(ctx)
	}
	return c.d.drv.Open(c.uri)
}

func (c *connector) Driver() driver.Driver { return c.d.drv }

// prepare prepares q on a driver connection.
func prepare(ctx context.Context, conn driver.Conn, q string) (driver.Stmt, error) {
	if p, ok := conn.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, q)
	}
	return conn.Prepare(q)
}

// minVersion is the oldest SQLite the statements here run on: json_each
// and json_group_array built in (3.38), octet_length (3.43), a NUL
// inside a JSON string read back whole (3.45).
const minVersion = 3_045_000

// checkEngine checks, on a connection just opened, that the driver's
// SQLite can run the library's statements.
func (d *Driver) checkEngine(ctx context.Context, c *Conn) error {
	var vals [1]driver.Value
	// A NUL inside a JSON string must come back whole from json_each
	// (keys travel as JSON arrays), as it does from SQLite 3.45 on.
	err := c.first(ctx, `SELECT json_quote(sqlite_version()) WHERE octet_length('é') = 2
		AND (SELECT octet_length(value) FROM json_each('["a\u0000b"]')) = 3`, vals[:])
	var v string
	if err == nil {
		s, _ := vals[0].(string)
		v, err = parseString(s)
	}
	switch {
	case err != nil:
		return fmt.Errorf("check SQLite through %s: %w (the library needs SQLite 3.45.0 or later, with the JSON functions): %w", d.Name, err, ErrUnsupportedDriver)
	case versionNumber(v) < minVersion:
		return fmt.Errorf("check SQLite through %s: version %q, the library needs 3.45.0 or later (the JSON functions, octet_length, NULs inside JSON strings): %w", d.Name, v, ErrUnsupportedDriver)
	}
	return nil
}

// versionNumber turns "3.54.1" into 3054001 (0 if it is not a version).
func versionNumber(v string) int {
	f := strings.Split(v, ".")
	if len(f) < 2 {
		return 0
	}
	n := 0
	for i := range 3 {
		x := 0
		if i < len(f) {
			var err error
			if x, err = strconv.Atoi(f[i]); err != nil {
				return 0
			}
		}
		n = n*1000 + x
	}
	return n
}
