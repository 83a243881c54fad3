package store

import (
	"context"
	"strings"
	"testing"
)

// TestCatalogAppended: the catalog tells a column appended to the table
// (ALTER TABLE … ADD COLUMN, on every kind of table) from any change a
// resolution of the source rests on, each made on a fresh database.
func TestCatalogAppended(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, create string
		ddl          []string
		same         bool
	}{
		{"nothing", `CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT)`, []string{`CREATE TABLE other (x)`}, true},
		{"add column", `CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT)`, []string{`ALTER TABLE t ADD COLUMN seen INTEGER DEFAULT (0)`}, true},
		{"two columns", `CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT)`, []string{`ALTER TABLE t ADD COLUMN a`, `ALTER TABLE t ADD COLUMN b TEXT`}, true},
		{"add column, without rowid", `CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT) WITHOUT ROWID`, []string{`ALTER TABLE t ADD COLUMN a`}, true},
		{"add column, strict", `CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT) STRICT`, []string{`ALTER TABLE t ADD COLUMN a TEXT`}, true},
		{"index", `CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT)`, []string{`CREATE INDEX t_body ON t (body)`}, false},
		{"rename column", `CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT)`, []string{`ALTER TABLE t RENAME COLUMN body TO text`}, false},
		{"drop column", `CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT, x)`, []string{`ALTER TABLE t DROP COLUMN x`}, false},
		{"12-step", `CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT)`, []string{
			`CREATE TABLE t2 (id TEXT PRIMARY KEY COLLATE NOCASE, body TEXT)`, `INSERT INTO t2 SELECT * FROM t`, `DROP TABLE t`, `ALTER TABLE t2 RENAME TO t`}, false},
		{"trigger of the app", `CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT)`, []string{`CREATE TRIGGER mine AFTER DELETE ON t BEGIN SELECT 1; END`}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if strings.Contains(c.create+strings.Join(c.ddl, ";"), "STRICT") || strings.Contains(strings.Join(c.ddl, ";"), "DROP COLUMN") {
				skipBelow(t, "3.37.0")
			}
			db, app := testDB(t, c.create)
			s := attach(t, db, "t", "id", false)
			before := readCatalog(t, db, s)
			for _, q := range c.ddl {
				if _, err := app.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			after := readCatalog(t, db, s)
			if after.Schema == before.Schema {
				t.Fatal("the schema cookie did not move")
			}
			if got := after.Appended(before); got != c.same {
				t.Fatalf("Appended = %v, want %v\nbefore: %q %q\nafter:  %q %q", got, c.same, before.text, before.rest, after.text, after.rest)
			}
		})
	}
}

// TestCatalogSeesTheSourcesRow: a source detached and attached again by
// another process may get every catalog row back byte for byte (its id
// and names reused, and with auto_vacuum the same root pages), but not its
// row: another dataset and key, which the catalog tells.
func TestCatalogSeesTheSourcesRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testDB(t, `PRAGMA auto_vacuum = FULL`, `CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT)`, `CREATE TABLE u (id TEXT PRIMARY KEY)`)
	attach(t, db, "t", "id", false)
	s := attach(t, db, "u", "id", false)
	before := readCatalog(t, db, s)
	if err := db.Detach(ctx, "u", "id", false); err != nil {
		t.Fatal(err)
	}
	again := attach(t, db, "u", "id", false)
	if again.ID != s.ID || again.DatasetID == s.DatasetID {
		t.Fatalf("attached again as id %d (was %d), dataset changed %v", again.ID, s.ID, again.DatasetID != s.DatasetID)
	}
	after := readCatalog(t, db, s)
	if after.Appended(before) {
		t.Fatalf("a source attached again resolves as before:\nbefore %q\nafter  %q", before.rest, after.rest)
	}
}

// readCatalog reads s's catalog on a reader of db.
func readCatalog(t *testing.T, db *DB, s *Source) Catalog {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Release(conn)
	cat, err := conn.Catalog(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}
