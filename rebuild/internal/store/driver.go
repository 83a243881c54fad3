package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net/url"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Driver is the SQLite driver the library opens connections with: the
// app's, since two copies of SQLite in one process do not see each other's
// locks (sqlite.org/howtocorrupt.html, 2.2.1). It must take contexts,
// SQLite's URI file names, and report SQLite's result codes (sqlitecode).
type Driver struct {
	drv  driver.Driver
	Name string // the driver's package, for messages
	// columnsFirst: rows must be asked their columns before the first row,
	// as database/sql does (ncruces reads its conversions from them).
	columnsFirst bool
	// leaksCancelled: a query whose context ends while the driver runs it
	// loses its statement, unfinalized (see QueryContext).
	leaksCancelled bool
}

// QueryContext returns the context for a query the library runs under
// ctx. modernc.org/sqlite before v1.40.1 drops the rows of a query whose
// context ends while the query starts, without finalizing the statement:
// a read statement left stepped holds its SHARED lock for good (other
// connections' commits then fail with SQLITE_BUSY in the rollback
// journal modes) and its connection cannot close (its file stays open
// after Close). With such a driver a query runs under ctx without its
// cancellation: it is not interrupted once it has started, and ends
// where the library checks ctx between rows and statements. A context
// that has already ended is passed as it is: the driver returns its
// error before it prepares anything.
func (d *Driver) QueryContext(ctx context.Context) context.Context {
	if d == nil || !d.leaksCancelled || ctx.Err() != nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// moderncLeaksCancelled reports whether the modernc.org/sqlite this
// program is built with is older than v1.40.1 (or of a version the build
// information does not tell).
var moderncLeaksCancelled = sync.OnceValue(func() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return true
	}
	for _, m := range bi.Deps {
		if m.Path != "modernc.org/sqlite" {
			continue
		}
		v := m.Version
		if m.Replace != nil {
			v = m.Replace.Version
		}
		return !semverAtLeast(v, 1, 40, 1)
	}
	return true
})

// semverAtLeast reports whether v (vMAJOR.MINOR.PATCH, maybe with a
// suffix) is at least major.minor.patch; false if v is not such a version.
func semverAtLeast(v string, major, minor, patch int) bool {
	f := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(f) != 3 || !strings.HasPrefix(v, "v") {
		return false
	}
	f[2], _, _ = strings.Cut(f[2], "-")
	f[2], _, _ = strings.Cut(f[2], "+")
	var n [3]int
	for i, s := range f {
		x, err := strconv.Atoi(s)
		if err != nil {
			return false
		}
		n[i] = x
	}
	return slices.Compare(n[:], []int{major, minor, patch}) >= 0
}

// supported are the drivers the library is tested with, by the package of
// their driver type. ncruces turns text that looks like a time into a
// time.Time: every key travels inside a JSON string, never as a bare value.
var supported = map[string]string{
	"github.com/mattn/go-sqlite3":          "github.com/mattn/go-sqlite3",
	"modernc.org/sqlite":                   "modernc.org/sqlite",
	"github.com/ncruces/go-sqlite3/driver": "github.com/ncruces/go-sqlite3",
	"github.com/mutecomm/go-sqlcipher/v4":  "github.com/mutecomm/go-sqlcipher/v4",
}

// NewDriver returns the driver d, or if nil the default (mattn/go-sqlite3,
// default_mattn.go) when the build has it and links no other SQLite:
// ErrUnsupportedDriver or ErrSecondSQLite if not.
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
		return nil, fmt.Errorf("choose SQLite driver: %T is not one the library supports (github.com/mattn/go-sqlite3, modernc.org/sqlite, github.com/ncruces/go-sqlite3/driver, github.com/mutecomm/go-sqlcipher/v4); "+
			"if it wraps one of them, pass the driver it wraps: %w", d, ErrUnsupportedDriver)
	}
	return &Driver{drv: d, Name: name, columnsFirst: name == "github.com/ncruces/go-sqlite3",
		leaksCancelled: name == "modernc.org/sqlite" && moderncLeaksCancelled()}, nil
}

// pkgPath is the package of d's type (through pointers).
func pkgPath(d any) string {
	t := reflect.TypeOf(d)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath()
}

// engines are Go modules that link a SQLite of their own, other than
// mattn/go-sqlite3.
var engines = []string{
	"modernc.org/sqlite",
	"github.com/ncruces/go-sqlite3",
	"github.com/ncruces/go-sqlite3-wasm",
	"zombiezen.com/go/sqlite",
	"crawshaw.io/sqlite",
	"github.com/go-llsqlite/crawshaw",
	"github.com/mutecomm/go-sqlcipher",
	"github.com/mutecomm/go-sqlcipher/v4",
	"github.com/xeodou/go-sqlcipher",
	"github.com/CovenantSQL/go-sqlite3-encrypt",
	"github.com/glebarez/go-sqlite",
	"github.com/tailscale/sqlite",
	"github.com/gwenn/gosqlite",
	"github.com/bvinc/go-sqlite-lite",
	"github.com/eatonphil/gosqlite",
	"github.com/mxk/go-sqlite",
	"github.com/tursodatabase/go-libsql",
	"github.com/libsql/go-libsql",
}

// otherCopies names the SQLite copies linked besides mattn's: modules of
// engines in the build information, and database/sql drivers registered
// from a package whose path says SQLite, SQLCipher or libSQL. A copy
// linked from C by another cgo package, or loaded at run time, is unseen.
func otherCopies() []string {
	var out []string
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if slices.ContainsFunc(engines, func(e string) bool { return m.Path == e || strings.HasPrefix(m.Path, e+"/v") }) {
				out = append(out, m.Path)
			}
		}
	}
	for _, name := range sql.Drivers() {
		db, err := sql.Open(name, "") // no connection: only the registered driver
		if err != nil {
			continue
		}
		p := pkgPath(db.Driver())
		_ = db.Close()
		low := strings.ToLower(p)
		if p == "github.com/mattn/go-sqlite3" || !(strings.Contains(low, "sqlite") || strings.Contains(low, "sqlcipher") || strings.Contains(low, "libsql")) ||
			slices.ContainsFunc(out, func(o string) bool { return strings.HasPrefix(p, o) }) {
			continue
		}
		out = append(out, p+` (registered as database/sql driver "`+name+`")`)
	}
	return out
}

// pool opens connections to path in URI mode mode (ro, rw, rwc), with the
// busy timeout set as they open (mattn runs PRAGMA synchronous then, which
// may wait for a lock), and a private cache whatever the process enabled,
// so that the library's reads never lock a table against the app's writers;
// then the app's parameters (params.go), which no error shows.
func (d *Driver) pool(path, mode string, busy time.Duration, params url.Values) (*sql.DB, error) {
	ms := strconv.FormatInt(busy.Milliseconds(), 10)
	opts := "mode=" + mode + "&cache=private"
	switch d.Name {
	case "github.com/mattn/go-sqlite3", "github.com/mutecomm/go-sqlcipher/v4": // keep SQLite's synchronous=FULL, not mattn's NORMAL
		opts += "&_busy_timeout=" + ms + "&_synchronous=FULL"
	default: // modernc and ncruces run the PRAGMAs a DSN lists
		opts += "&_pragma=busy_timeout(" + ms + ")"
	}
	if len(params) > 0 {
		opts += "&" + encodeParams(params)
	}
	uri := URI(path, opts)
	c := &connector{d: d, uri: uri, params: params}
	if dc, ok := d.drv.(driver.DriverContext); ok {
		inner, err := dc.OpenConnector(uri)
		if err != nil {
			return nil, fmt.Errorf("open %s with %s: %w", path, d.Name, redact(err, params))
		}
		c.inner = inner
	}
	return sql.OpenDB(c), nil
}

// connector opens connections through the app's driver.
type connector struct {
	d      *Driver
	uri    string           // holds params: never in a message
	params url.Values       // the app's, cut out of the driver's errors
	inner  driver.Connector // when the driver has connectors
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	var conn driver.Conn
	var err error
	if c.inner != nil {
		conn, err = c.inner.Connect(ctx)
	} else {
		conn, err = c.d.drv.Open(c.uri)
	}
	return conn, redact(err, c.params)
}

func (c *connector) Driver() driver.Driver { return c.d.drv }

// minVersion is the oldest SQLite the JSON dialect runs on: json_each
// and json_group_array built in (3.38), octet_length (3.43), a NUL inside
// a JSON string read back whole from json_each (3.45). minPlainVersion is
// the oldest the plain dialect is tested on (SQLCipher 4.4.2's); it needs
// aggregates with FILTER (3.30).
const (
	minVersion      = 3_045_000
	minPlainVersion = 3_033_000
)

// checkEngine checks that the driver's SQLite can run the statements, and
// chooses their dialect: JSON where the SQLite has it (unless
// Knobs.PlainSQL), plain otherwise.
func (d *Driver) checkEngine(ctx context.Context, c *Conn) (plain bool, err error) {
	var vals [1]driver.Value
	if err = c.first(ctx, `SELECT sqlite_version()`, vals[:]); err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("check SQLite through %s: %w", d.Name, err)
		}
		return false, fmt.Errorf("check SQLite through %s: %w: %w", d.Name, err, ErrUnsupportedDriver)
	}
	v := textValue(vals[0])
	if versionNumber(v) >= minVersion && !c.db.knobs.PlainSQL {
		err = c.first(ctx, `SELECT 1 WHERE octet_length('é') = 2
			AND (SELECT octet_length(value) FROM json_each('["a\u0000b"]')) = 3`, vals[:])
		if err == nil {
			return false, nil
		}
		if ctx.Err() != nil {
			return false, fmt.Errorf("check SQLite through %s: %w", d.Name, err)
		}
	}
	if versionNumber(v) < minPlainVersion {
		return false, fmt.Errorf("check SQLite through %s: version %q, the library needs 3.33.0 or later: %w", d.Name, v, ErrUnsupportedDriver)
	}
	return true, nil
}

// versionNumber turns "3.54.1" into 3054001 (0 if it is not a version).
func versionNumber(v string) int {
	var major, minor, patch int
	if n, _ := fmt.Sscanf(v, "%d.%d.%d", &major, &minor, &patch); n < 2 {
		return 0
	}
	return major*1_000_000 + minor*1000 + patch
}
