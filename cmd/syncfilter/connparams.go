package main

import (
	"database/sql/driver"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/syncfilter/syncfilter/rebuild"
)

// An encrypted database's key reaches the command as the library takes
// it, connection parameters (rebuild.DBConfig.ConnParams), from the
// environment, never from a flag that the process list shows:
// SYNCFILTER_CONN_PARAMS holds them as URI query text
// ("_pragma_key=x'…'" for SQLCipher, "vfs=adiantum&hexkey=…" for
// ncruces), or SYNCFILTER_CONN_PARAMS_FILE names a file that does (a
// trailing newline is ignored). No message shows their values.
const (
	connParamsEnv     = "SYNCFILTER_CONN_PARAMS"
	connParamsFileEnv = "SYNCFILTER_CONN_PARAMS_FILE"
)

// opensDB are the commands that open an app's database: only they read
// the connection parameters (a malformed variable fails no other).
var opensDB = map[string]bool{"rebuild": true, "status": true, "check": true, "query": true, "detach": true}

// cliDriver is the SQLite driver the command opens databases with: nil,
// the library's default (mattn/go-sqlite3), unless a build for an
// encrypting driver sets it (driver_sqlcipher.go).
var cliDriver driver.Driver

// loadConnParams reads the connection parameters from the environment.
func (a *app) loadConnParams() error {
	text, fromFile := os.Getenv(connParamsEnv), os.Getenv(connParamsFileEnv)
	switch {
	case text != "" && fromFile != "":
		return usagef("set %s or %s, not both", connParamsEnv, connParamsFileEnv)
	case fromFile != "":
		info, err := os.Stat(fromFile)
		if err != nil {
			return usagef("%s: %v", connParamsFileEnv, err)
		}
		if info.Mode().Perm()&0o077 != 0 {
			a.log.printf("syncfilter: warning: %s names %s, which users other than its owner may read (mode %#o): chmod 600 it", connParamsFileEnv, fromFile, info.Mode().Perm())
		}
		b, err := os.ReadFile(fromFile)
		if err != nil {
			return usagef("%s: %v", connParamsFileEnv, err)
		}
		text = strings.TrimRight(string(b), "\r\n")
		if text == "" {
			return usagef("%s: %s is empty", connParamsFileEnv, fromFile)
		}
	case text == "":
		return nil
	}
	q, err := url.ParseQuery(text)
	if err != nil {
		return usagef("%s: not URI query text (name=value&…, values percent-encoded)", connParamsSource(fromFile))
	}
	a.params = q
	return nil
}

// connParamsSource names where the parameters came from, for messages.
func connParamsSource(file string) string {
	if file != "" {
		return fmt.Sprintf("the file %s names (%s)", connParamsFileEnv, file)
	}
	return connParamsEnv
}

// dbConfig is cfg with the command's driver and connection parameters.
func (a *app) dbConfig(cfg rebuild.DBConfig) rebuild.DBConfig {
	cfg.Driver, cfg.ConnParams = cliDriver, a.params
	return cfg
}

// keyHint tells how to give the key when the library says it is wrong or
// missing.
func (a *app) keyHint(msg string) string {
	if !strings.Contains(msg, "key is wrong or missing") {
		return ""
	}
	if a.params == nil {
		return fmt.Sprintf(" (an encrypted database: give its key in %s or in a file named by %s, e.g. _pragma_key=x'…' for SQLCipher, vfs=adiantum&hexkey=… for ncruces)", connParamsEnv, connParamsFileEnv)
	}
	return fmt.Sprintf(" (the parameters of %s or %s do not open it)", connParamsEnv, connParamsFileEnv)
}
