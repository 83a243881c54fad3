//go:build cgo && syncfilter_nomattn && syncfilter_sqlcipher

package syncbench

import _ "github.com/mutecomm/go-sqlcipher/v4" // registers the "sqlite3" driver

func init() { drivers = append(drivers, Sqlcipher) }
