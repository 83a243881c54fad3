// Package sqlcipher is the module of the tests' SQLCipher runs
// (github.com/mutecomm/go-sqlcipher/v4, the fork of mattn/go-sqlite3 that
// status-go and berty ship): its go.mod requires the driver, which the
// library's module does not (internal/testdriver/sqlcipher.go says why);
// go.work joins the two. Nothing imports this package: it keeps the
// requirement tidy.
package sqlcipher

import _ "github.com/mutecomm/go-sqlcipher/v4"
