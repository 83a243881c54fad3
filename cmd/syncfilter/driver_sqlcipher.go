//go:build ignore

// The command on SQLCipher (github.com/mutecomm/go-sqlcipher/v4), which
// cannot be linked beside mattn/go-sqlite3 and which the module does not
// require (internal/testdriver/sqlcipher.go says why): make cli-sqlcipher
// builds it through an overlay that puts "//go:build cgo &&
// syncfilter_nomattn" in place of the first line, with -tags
// syncfilter_nomattn, in the workspace internal/sqlcipher/go.work.

package main

import sqlite3 "github.com/mutecomm/go-sqlcipher/v4"

func init() {
	cliDriver = &sqlite3.SQLiteDriver{}
	sqliteVersion = func() string {
		v, _, _ := sqlite3.Version()
		return v + " (SQLCipher, github.com/mutecomm/go-sqlcipher/v4)"
	}
}
