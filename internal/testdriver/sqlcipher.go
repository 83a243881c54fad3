//go:build ignore

// github.com/mutecomm/go-sqlcipher/v4 (SQLCipher 4.4.2 on SQLite 3.33.0,
// without the JSON functions) is a fork of mattn/go-sqlite3: both link
// SQLite's C symbols, so no build holds both, and the module does not
// require it (an app on mattn would get it in its go.sum). make's
// sqlcipher runs build this file through an overlay that puts
// "//go:build cgo && syncfilter_nomattn" in place of its first line, with
// -tags syncfilter_nomattn, in the workspace internal/sqlcipher/go.work,
// whose second module requires the driver.

package testdriver

import (
	"database/sql/driver"
	"fmt"

	sqlite3 "github.com/mutecomm/go-sqlcipher/v4"
)

func init() {
	register("sqlcipher", "mattn", &sqlite3.SQLiteDriver{}, func(dst any, src string) error {
		sc, err := (&sqlite3.SQLiteDriver{}).Open(src)
		if err != nil {
			return err
		}
		defer sc.Close()
		b, err := dst.(*sqlite3.SQLiteConn).Backup("main", sc.(*sqlite3.SQLiteConn), "main")
		if err != nil {
			return err
		}
		if done, err := b.Step(-1); err != nil || !done {
			_ = b.Finish()
			return fmt.Errorf("backup step: done %v, %v", done, err)
		}
		return b.Finish()
	})
	collated["sqlcipher"] = func(name string, cmp func(a, b string) int) driver.Driver {
		return &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error { return c.RegisterCollation(name, cmp) }}
	}
}
