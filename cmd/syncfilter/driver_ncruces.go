//go:build ignore

// The command on ncruces/go-sqlite3 with its encrypting VFSes (adiantum,
// xts), which the module does not require (internal/testdriver/ncruces.go
// says why): make cli-ncruces builds it with CGO_ENABLED=0 through an
// overlay that puts "//go:build !cgo || syncfilter_nomattn" in place of
// the first line, in the workspace internal/ncruces/go.work.

package main

import (
	"github.com/ncruces/go-sqlite3/driver"
	_ "github.com/ncruces/go-sqlite3/vfs/adiantum"
	_ "github.com/ncruces/go-sqlite3/vfs/xts"
)

func init() {
	cliDriver = &driver.SQLite{}
	sqliteVersion = func() string {
		db, err := driver.Open(":memory:")
		if err != nil {
			return ""
		}
		defer db.Close()
		var v string
		_ = db.QueryRow(`SELECT sqlite_version()`).Scan(&v)
		return v + " (github.com/ncruces/go-sqlite3, with the adiantum and xts VFSes)"
	}
}
