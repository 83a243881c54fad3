//go:build !cgo || syncfilter_nomattn

package store

import "database/sql/driver"

// defaultDriver: none without cgo or with the syncfilter_nomattn tag (for
// ncruces, which registers mattn's database/sql name): the app names one.
func defaultDriver() driver.Driver { return nil }
