// Package ncruces is the module of the tests' ncruces/go-sqlite3 runs:
// its go.mod requires the driver, which the library's module does not
// (internal/testdriver/ncruces.go says why); go.work joins the two.
// Nothing imports this package: it keeps the requirement tidy, with the
// encrypting VFSes the tests open databases through.
package ncruces

import (
	_ "github.com/ncruces/go-sqlite3/driver"
	_ "github.com/ncruces/go-sqlite3/vfs/adiantum"
	_ "github.com/ncruces/go-sqlite3/vfs/xts"
)
