package store

import (
	"context"
	"strings"
	"testing"
)

// TestLookupUsesTheIndex: the one-key lookup and the confirmations (BINARY
// and text forced) are served by the column's index, as `WHERE id = ?`
// is, for the shapes of key column the library accepts; and the lookup
// answers byte for byte.
func TestLookupUsesTheIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, schema := range []string{
		`CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT)`,
		`CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT) WITHOUT ROWID`,
		`CREATE TABLE t (n INTEGER PRIMARY KEY, id TEXT, body TEXT); CREATE INDEX t_id ON t (id)`,
		`CREATE TABLE t (n INTEGER PRIMARY KEY, id TEXT COLLATE BINARY UNIQUE)`,
	} {
		db, app := testDB(t, strings.Split(schema, "; ")...)
		for _, k := range []string{"abc", "ABC-1", "0123", "x\x00y"} {
			if _, err := app.Exec(`INSERT INTO t (id) VALUES (?)`, k); err != nil {
				t.Fatal(err)
			}
		}
		s := attach(t, db, "t", "id", false)
		c, err := db.Reader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		keys, args, spArgs := s.keysFrom(1, 0), []any{`["abc","x"]`}, []any{`["abc","x"]`, `[1]`}
		if s.plain {
			keys, args, spArgs = s.keysFrom(3, 2), []any{nil, nil, "abc", "x"}, []any{nil, []byte("01"), "abc", "x"}
		}
		for _, st := range []struct {
			name, sql string
			args      []any
		}{
			{"the lookup", s.lookupSQL(), []any{"abc"}},
			{"a confirmation", s.confirmSQL(false, false, keys, "?2"), args},
			{"a confirmation with spellings", s.confirmSQL(true, false, keys, "?2"), spArgs},
			{"a confirmation of one key", s.confirmSQL(true, true, "?1", "?2"), []any{"abc", 1}},
		} {
			rows, err := c.QueryContext(ctx, `EXPLAIN QUERY PLAN `+st.sql, st.args...)
			if err != nil {
				t.Fatal(err)
			}
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			rows.Close()
			searches := false
			for _, d := range plan {
				// SQLite before 3.36 names the table and its alias.
				d = strings.Replace(strings.Replace(d, " TABLE t AS t ", " t ", 1), " TABLE t ", " t ", 1)
				if strings.HasPrefix(d, "SCAN t") {
					t.Errorf("%s: %s scans the table: %q", schema, st.name, plan)
				}
				searches = searches || strings.HasPrefix(d, "SEARCH t ") && strings.Contains(d, " USING ") && strings.HasSuffix(d, "(id=?)")
			}
			if !searches {
				t.Errorf("%s: %s does not search the index: %q", schema, st.name, plan)
			}
		}
		for k, want := range map[string]bool{"abc": true, "ABC-1": true, "0123": true, "x\x00y": true, "ABC": false, "123": false, "x": false, "abc ": false} {
			got, err := c.Lookup(ctx, s, k)
			if err != nil || got != want {
				t.Errorf("%s: Lookup(%q) = %v, %v; want %v", schema, k, got, err, want)
			}
		}
		db.Release(c)
	}
}

// TestLookupStaysExactAfterAMigration: a migration that gives the key
// column a collation or affinity under which other keys compare equal
// (NOCASE, NUMERIC) does not make the lookup match them: it compares text
// byte for byte whatever the schema says; and a migration that renames
// the column makes the lookup fail, not compare the key with the text of
// the column's old name (as a double-quoted name would).
func TestLookupStaysExactAfterAMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, app := testDB(t, `CREATE TABLE t (id TEXT PRIMARY KEY)`)
	if _, err := app.Exec(`INSERT INTO t (id) VALUES ('abc'), ('123')`); err != nil {
		t.Fatal(err)
	}
	s := attach(t, db, "t", "id", false)
	for _, migration := range []string{
		`CREATE TABLE t2 (id TEXT COLLATE NOCASE PRIMARY KEY); INSERT INTO t2 SELECT id FROM t; DROP TABLE t; ALTER TABLE t2 RENAME TO t`,
		`CREATE TABLE t2 (id NUMERIC PRIMARY KEY); INSERT INTO t2 SELECT id FROM t; DROP TABLE t; ALTER TABLE t2 RENAME TO t`,
	} {
		for _, q := range strings.Split(migration, "; ") {
			if _, err := app.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		c, err := db.Reader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"ABC", "0123", "123.0", "+123"} {
			if got, err := c.Lookup(ctx, s, k); err != nil || got {
				t.Errorf("after %q: Lookup(%q) = %v, %v; want false", migration, k, got, err)
			}
		}
		db.Release(c)
	}
	if _, err := app.Exec(`ALTER TABLE t RENAME COLUMN id TO server_id`); err != nil {
		t.Fatal(err)
	}
	c, err := db.Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Release(c)
	if got, err := c.Lookup(ctx, s, "id"); err == nil {
		t.Fatalf("after the column's rename: Lookup(\"id\") = %v, nil; want an error", got)
	}
}
