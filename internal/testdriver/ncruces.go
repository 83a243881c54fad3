//go:build !cgo || syncfilter_nomattn

package testdriver

import "github.com/ncruces/go-sqlite3/driver"

func init() {
	register("ncruces", "pragma", &driver.SQLite{}, func(dst any, src string) error {
		return dst.(driver.Conn).Raw().Restore("main", src)
	})
}
