//go:build cgo && !syncfilter_nomattn

package testdriver

import (
	"database/sql/driver"
	"fmt"

	"github.com/mattn/go-sqlite3"
)

func init() {
	register("mattn", "mattn", &sqlite3.SQLiteDriver{}, func(dst any, src string) error {
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
}

func init() {
	collated["mattn"] = func(name string, cmp func(a, b string) int) driver.Driver {
		return &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error { return c.RegisterCollation(name, cmp) }}
	}
}
