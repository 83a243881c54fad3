//go:build !cgo || syncfilter_nomattn

package store

import "database/sql/driver"

// defaultDriver: without cgo, or with the syncfilter_nomattn tag (an app
// on github.com/ncruces/go-sqlite3, which registers the same
// database/sql name as mattn/go-sqlite3), there is no default; the app
// names its driver.
func defaultDriver() driver.Driver { return nil }
