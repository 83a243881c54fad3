//go:build (!cgo || syncfilter_nomattn) && syncfilter_adiantum

package syncbench

import (
	_ "github.com/ncruces/go-sqlite3/driver"       // registers the "sqlite3" driver
	_ "github.com/ncruces/go-sqlite3/vfs/adiantum" // the encrypting VFS
)

func init() { drivers = append(drivers, NcrucesAdiantum) }
