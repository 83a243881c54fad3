//go:build cgo && !syncfilter_nomattn

package main

import sqlite3 "github.com/mattn/go-sqlite3"

func init() {
	sqliteVersion = func() string { v, _, _ := sqlite3.Version(); return v }
}
