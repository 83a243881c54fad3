package rebuild

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// testKey is a key of 32 bytes in hex, as DBConfig.ConnParams carries an
// encrypting VFS's (hexkey).
const testKey = "3f9c0e1b7a5d2c4e6f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6"

// dirFiles returns the names and contents of the files in dir.
func dirFiles(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// sameFiles fails t unless dir holds what before held, byte for byte.
func sameFiles(t testing.TB, dir string, before map[string][]byte) {
	t.Helper()
	after := dirFiles(t, dir)
	for name, b := range after {
		if old, ok := before[name]; !ok {
			t.Errorf("%s appeared beside the database", name)
		} else if !bytes.Equal(old, b) {
			t.Errorf("%s changed", name)
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			t.Errorf("%s removed", name)
		}
	}
}

// Parameters the library sets itself are refused before anything opens,
// naming the key, never the value.
func TestConnParamsOwnRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, "a")
	before := dirFiles(t, filepath.Dir(path))
	for _, q := range []url.Values{
		{"mode": {"rwc"}, "hexkey": {testKey}},
		{"cache": {"shared"}, "hexkey": {testKey}},
		{"immutable": {"1"}, "hexkey": {testKey}},
		{"_pragma": {"busy_timeout(0)"}, "hexkey": {testKey}},
		{"_pragma": {"main.journal_mode=" + testKey}},
		{"_busy_timeout": {testKey}},
		{"_TXLOCK": {testKey}},
		{"": {testKey}},
		{"_pragma_key": {`abc"` + testKey}}, // go-sqlcipher pastes it between double quotes
	} {
		db, err := OpenDB(ctx, DBConfig{Path: path, Driver: testdriver.Driver(), ConnParams: q})
		if db != nil {
			_ = db.Close(ctx)
		}
		if !errors.Is(err, ErrBadConfig) {
			t.Fatalf("OpenDB with %v: %v, want ErrBadConfig", slices.Collect(maps.Keys(q)), err)
		}
		if strings.Contains(strings.ToLower(err.Error()), testKey) {
			t.Fatalf("the error shows the key: %v", err)
		}
	}
	sameFiles(t, filepath.Dir(path), before)
}

// A connection parameter the driver or SQLite refuses fails OpenDB; the
// error shows no value of DBConfig.ConnParams, even where the driver's own
// error echoes it.
func TestConnParamsNeverInErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, "a")
	app := rawDB(t, path)
	for _, q := range []url.Values{
		{"vfs": {testKey}}, // SQLite: no such vfs
		{"vfs": {"nope-" + testKey}, "hexkey": {testKey}}, // the key beside it
		{"_auto_vacuum": {testKey}},                       // mattn echoes the value it refuses
		{"_pragma": {"hexkey('" + testKey + "')"}},        // an unknown PRAGMA does nothing: no error
		{"_pragma": {"key='" + testKey + "x"}},            // a syntax error after the quote
	} {
		echoed := ""
		if err := driverSays(app.Driver(), testdriver.DSN(testdriver.Name(), path, testdriver.App{})+"&"+q.Encode()); err != nil &&
			strings.Contains(err.Error(), testKey) {
			echoed = " (the driver's own error does)"
		}
		db, err := OpenDB(ctx, DBConfig{Path: path, DB: app, ConnParams: q})
		if err == nil {
			_ = db.Close(ctx)
			continue
		}
		for _, s := range []string{testKey, strings.ToUpper(testKey), url.QueryEscape(q.Encode())} {
			if strings.Contains(err.Error(), s) {
				t.Fatalf("OpenDB with %v: the error shows the key: %v", slices.Collect(maps.Keys(q)), err)
			}
		}
		t.Logf("%v: %v%s", slices.Collect(maps.Keys(q)), err, echoed)
	}
}

// driverSays opens a connection of d to dsn and returns its error.
func driverSays(d driver.Driver, dsn string) error {
	var c driver.Conn
	var err error
	if dc, ok := d.(driver.DriverContext); ok {
		var cn driver.Connector
		if cn, err = dc.OpenConnector(dsn); err == nil {
			c, err = cn.Connect(context.Background())
		}
	} else {
		c, err = d.Open(dsn)
	}
	if c != nil {
		_ = c.Close()
	}
	return err
}

// A file that is not a database is a configuration error at open, and
// stays as it was (as does an encrypted one read with a wrong key,
// TestEncrypted).
func TestNotADatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	junk := make([]byte, 8192)
	_, _ = rand.Read(junk)
	copy(junk, "not SQLite ")
	if err := os.WriteFile(path, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	before := dirFiles(t, dir)
	ctx := context.Background()
	db, err := OpenDB(ctx, DBConfig{Path: path, Driver: testdriver.Driver(), ConnParams: url.Values{"hexkey": {testKey}}})
	if db != nil {
		_ = db.Close(ctx)
	}
	if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "key is wrong") {
		t.Fatalf("OpenDB of a file that is no database: %v, want ErrBadConfig saying the key may be wrong", err)
	}
	if strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), hex.EncodeToString([]byte(testKey))) {
		t.Fatalf("the error shows the key: %v", err)
	}
	sameFiles(t, dir, before)
}
