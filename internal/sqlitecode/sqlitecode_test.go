package sqlitecode_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/sqlitecode"
	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// TestCodesOfEveryDriver: the result code of a read-only write, a UNIQUE
// violation of the primary key and a busy write lock is read from each driver's own error
// values (each driver of this build, on a file of its own).
func TestCodesOfEveryDriver(t *testing.T) {
	for _, name := range testdriver.Names() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "codes.db")
			open := func(o testdriver.App) *sql.DB {
				db, err := testdriver.OpenWith(name, path, o)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = db.Close() })
				return db
			}
			rw := open(testdriver.App{})
			if _, err := rw.Exec(`CREATE TABLE t (id TEXT PRIMARY KEY); INSERT INTO t VALUES ('a')`); err != nil {
				t.Fatal(err)
			}
			check := func(what string, err error, want int) {
				t.Helper()
				got, ok := sqlitecode.Of(err)
				if !ok || got != want || !sqlitecode.Is(err, want) || !sqlitecode.Is(fmt.Errorf("wrapped: %w", err), want&0xff) {
					t.Fatalf("%s: %v (%T): code %d, %v; want %d", what, err, err, got, ok, want)
				}
			}
			_, err := rw.Exec(`INSERT INTO t VALUES ('a')`)
			check("primary key", err, 19|6<<8) // SQLITE_CONSTRAINT_PRIMARYKEY
			_, err = open(testdriver.App{ReadOnly: true}).Exec(`INSERT INTO t VALUES ('b')`)
			check("read-only", err, sqlitecode.ReadOnly)
			holder, err := rw.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			if _, err := holder.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
				t.Fatal(err)
			}
			defer holder.ExecContext(ctx, `ROLLBACK`)
			_, err = open(testdriver.App{BusyTimeout: time.Millisecond}).Exec(`INSERT INTO t VALUES ('c')`)
			check("busy", err, sqlitecode.Busy)
			if _, ok := sqlitecode.Of(fmt.Errorf("not SQLite")); ok {
				t.Fatal("a plain error read as a SQLite error")
			}
		})
	}
}
