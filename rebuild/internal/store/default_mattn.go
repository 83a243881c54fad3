//go:build cgo && !syncfilter_nomattn

package store

import (
	"database/sql/driver"

	"github.com/mattn/go-sqlite3"
)

// defaultDriver is the driver used when the app names none.
func defaultDriver() driver.Driver { return &sqlite3.SQLiteDriver{} }
