package store

import (
	"database/sql"
	"runtime/debug"
	"slices"
	"strings"
)

// engines are Go modules that link a copy of SQLite of their own (C, or C
// translated to Go or wasm), other than github.com/mattn/go-sqlite3.
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

// otherCopies names the SQLite copies this program links besides
// mattn/go-sqlite3's: modules known to carry one (from the build
// information Go records in every binary built with modules), and any
// database/sql driver registered from a package whose path says SQLite
// (or SQLCipher, libSQL) other than mattn's. It cannot see a copy linked
// from C by another cgo package, a shared library loaded at run time, or
// a program built without module information.
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
		if p == "github.com/mattn/go-sqlite3" || !(strings.Contains(low, "sqlite") || strings.Contains(low, "sqlcipher") || strings.Contains(low, "libsql")) {
			continue
		}
		dup := false
		for _, o := range out {
			if strings.HasPrefix(p, o) {
				dup = true
			}
		}
		if !dup {
			out = append(out, p+` (registered as database/sql driver "`+name+`")`)
		}
	}
	return out
}
