//go:build modernc

package syncbench

import _ "modernc.org/sqlite" // registers the "sqlite" driver

func init() { drivers = append(drivers, Modernc) }
