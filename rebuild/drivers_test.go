package rebuild

import (
	"bytes"
	"context"
	"database/sql/driver"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// TestOpenNamesTheDriver: without a driver, a program that links a
// second SQLite (this test binary links two) is refused before anything
// is written, with ErrSecondSQLite, or, in a build without the default,
// ErrUnsupportedDriver; an unknown driver is refused with ErrUnsupportedDriver;
// each driver of the build answers, and Detach given the app's *sql.DB
// (DBConfig.DB) uses its driver.
func TestOpenNamesTheDriver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, "a", "b")
	before := schema(t, path)
	_, err := OpenDB(ctx, DBConfig{Path: path})
	if !errors.Is(err, ErrSecondSQLite) && !errors.Is(err, ErrUnsupportedDriver) {
		t.Fatalf("OpenDB without a driver in a program with two SQLite copies: %v", err)
	}
	if _, err := Open(ctx, DBConfig{Path: path}, Source{Table: "records", Column: "id"}); !errors.Is(err, ErrSecondSQLite) && !errors.Is(err, ErrUnsupportedDriver) {
		t.Fatalf("Open without a driver: %v", err)
	}
	if _, err := OpenDB(ctx, DBConfig{Path: path, Driver: otherDriver{}}); !errors.Is(err, ErrUnsupportedDriver) {
		t.Fatalf("OpenDB with an unknown driver: %v", err)
	}
	if !bytes.Equal(schema(t, path), before) {
		t.Fatal("a refused open changed the schema")
	}
	for _, name := range testdriver.Names() {
		d, _ := testdriver.Get(name)
		p := filepath.Join(t.TempDir(), "app.db")
		app, err := testdriver.OpenWith(name, p, testdriver.App{})
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, app, `CREATE TABLE records (id TEXT PRIMARY KEY); INSERT INTO records VALUES ('a')`)
		ix, err := Open(ctx, DBConfig{Path: p, Driver: d}, Source{Table: "records", Column: "id"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := ix.Missing(ctx, []string{"a", "b"})
		if err != nil || len(got) != 2 || got[0] || !got[1] {
			t.Fatalf("%s: Missing = %v, %v", name, got, err)
		}
		if err := ix.Wait(ctx); err != nil { // the first scan done: the attach stays
			t.Fatalf("%s: Wait = %v", name, err)
		}
		if err := ix.Close(ctx); err != nil {
			t.Fatal(err)
		}
		// Given the app's *sql.DB alone, Detach takes its driver, as OpenDB does.
		if err := Detach(ctx, DBConfig{Path: p, DB: app}, "records", "id"); err != nil {
			t.Fatalf("%s: Detach with DBConfig.DB: %v", name, err)
		}
		_ = app.Close()
	}
}

type otherDriver struct{}

func (otherDriver) Open(string) (driver.Conn, error) { return nil, errors.New("not SQLite") }

// TestSecondCopyInTheBuild: a program that links a second SQLite without
// registering it with database/sql (ncruces' core package) is refused
// without a driver: the library reads the copy from the modules Go
// records in the binary.
func TestSecondCopyInTheBuild(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a program")
	}
	if testdriver.Name() != "mattn" {
		t.Skip("the default driver, mattn, is not in this build")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	bin := filepath.Join(t.TempDir(), "secondcopy")
	build := exec.Command(goBin, "build", "-o", bin, "./testdata/secondcopy")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	path := appDB(t, "a")
	out, err := exec.Command(bin, path).CombinedOutput()
	if err != nil {
		t.Fatalf("a program with a second SQLite opened a database without a driver: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("modernc.org/sqlite")) {
		t.Fatalf("the refusal does not name the second copy: %s", out)
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatal("the refused program left a WAL")
	}
}
