//go:build cgo && !syncfilter_nomattn

package syncbench

import _ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver

func init() { drivers = append(drivers, Mattn) }
