// Command secondcopy is an app that links a second copy of SQLite
// (modernc.org/sqlite's transpiled SQLite, modernc.org/sqlite/lib, without
// registering a database/sql driver) beside the library's default, mattn/go-sqlite3, and opens a
// database without naming its driver: OpenDB must refuse it, seeing the
// copy in the build information Go records in the binary. It prints the
// error and exits 0 if the refusal is ErrSecondSQLite.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/syncfilter/syncfilter/rebuild"
	_ "modernc.org/sqlite/lib"
)

func main() {
	_, err := rebuild.OpenDB(context.Background(), rebuild.DBConfig{Path: os.Args[1]})
	fmt.Println(err)
	if !errors.Is(err, rebuild.ErrSecondSQLite) {
		os.Exit(1)
	}
}
