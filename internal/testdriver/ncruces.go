//go:build ignore

// ncruces/go-sqlite3 asks for newer Go than go.mod's floor (v0.34.1 and
// later, the ones that embed SQLite, say go 1.25.0), and a test-only
// requirement in go.mod would move an app's go line and modules (MVS).
// So the module does not require it: make's ncruces runs (drivers,
// stress) build this file through an overlay that puts
// "//go:build !cgo || syncfilter_nomattn" in place of its first line,
// in the workspace internal/ncruces/go.work, whose second module
// requires ncruces. The encrypting VFSes adiantum and xts are registered
// too, as in an app that encrypts its database (rebuild's TestEncrypted).

package testdriver

import (
	"github.com/ncruces/go-sqlite3/driver"
	_ "github.com/ncruces/go-sqlite3/vfs/adiantum"
	_ "github.com/ncruces/go-sqlite3/vfs/xts"
)

func init() {
	register("ncruces", "pragma", &driver.SQLite{}, func(dst any, src string) error {
		return dst.(driver.Conn).Raw().Restore("main", src)
	})
}
