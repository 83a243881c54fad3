package rebuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/syncfilter/syncfilter/syncfilter"
)

// verRow is one row of a versioned table: its id as stored and its
// version (nil: NULL).
type verRow struct {
	id  string
	ver any
}

// needModel is the reference: the rows, and how ids compare.
type needModel struct {
	rows []verRow
	cmp  syncfilter.Compare
}

func (m *needModel) equal(a, b string) bool {
	if m.cmp == syncfilter.CompareBytes {
		return a == b
	}
	return norm.NFC.String(a) == norm.NFC.String(b)
}

// answer is what Need must say about (id, v).
func (m *needModel) answer(id string, v any) Verdict {
	out := NeedNew
	for _, r := range m.rows {
		if !m.equal(r.id, id) {
			continue
		}
		out = NeedUpdate
		if r.ver != nil && versionAtLeast(r.ver, v) {
			return Have
		}
	}
	return out
}

// versionAtLeast: a stored version counts only if it has the given one's
// type (an integer column's text or blob, a text column's blob, never).
func versionAtLeast(stored, given any) bool {
	switch s := stored.(type) {
	case int64:
		g, ok := given.(int64)
		return ok && s >= g
	case string:
		g, ok := given.(string)
		return ok && s >= g
	}
	return false
}

// needCase is one table shape of the reference test.
type needCase struct {
	name    string
	ddl     string
	cmp     syncfilter.Compare
	ver     func(r *rand.Rand) any // a random version of the column's type
	unique  bool                   // one row per id
	mistype []any                  // values of another type the app may store there
}

var needCases = []needCase{
	{name: "integer, several rows per id", ddl: `CREATE TABLE records (id TEXT NOT NULL, ver INTEGER, body TEXT); CREATE INDEX records_id ON records (id)`,
		ver: func(r *rand.Rand) any { return int64(r.IntN(6)) }, mistype: []any{"abc", []byte{0}, ""}},
	{name: "text, bytes", cmp: syncfilter.CompareBytes, unique: true,
		ddl: `CREATE TABLE records (id TEXT PRIMARY KEY, ver TEXT, body TEXT)`,
		ver: func(r *rand.Rand) any { return fmt.Sprintf("2026-12-0%dT10:00:00Z", 1+r.IntN(6)) }, mistype: []any{[]byte{0xff}}},
	{name: "text, canonical", unique: true,
		ddl: `CREATE TABLE records (id TEXT PRIMARY KEY, ver TEXT COLLATE BINARY, body TEXT)`,
		ver: func(r *rand.Rand) any { return fmt.Sprintf("%06d", r.IntN(6)) }, mistype: []any{[]byte("999999")}},
}

// TestNeedAgainstAReference: Need answers every position of random pages
// of (id, version) items exactly as the reference model does: ids
// repeated, in NFC and NFD spellings, never stored, invalid; versions
// older, equal and newer than the stored ones, and NULL ones stored; on
// every path (SQLite alone before the filter serves, the filter, rows
// inserted and versions updated after it opened, a reopen from its
// snapshot), in both compare modes.
func TestNeedAgainstAReference(t *testing.T) {
	for _, tc := range needCases {
		t.Run(tc.name, func(t *testing.T) { testNeed(t, tc) })
	}
}

func testNeed(t *testing.T, tc needCase) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, uint64(len(tc.name))))
	path := filepath.Join(t.TempDir(), "app.db")
	db := rawDB(t, path)
	mustExec(t, db, tc.ddl)
	m := &needModel{cmp: tc.cmp}
	names := []string{"Bo\u0308rk", "cafe\u0301", "caf\u00e9", "plain", "K-\u212a", "nul\x00e\u0301"}
	insert := func(n int) {
		t.Helper()
		for range n {
			id := fmt.Sprintf("%s-%d", names[r.IntN(len(names))], r.IntN(12))
			if r.IntN(2) == 0 {
				id = norm.NFD.String(id)
			}
			var v any
			switch r.IntN(8) {
			case 0: // NULL
			case 1:
				v = tc.mistype[r.IntN(len(tc.mistype))]
			default:
				v = tc.ver(r)
			}
			if tc.unique {
				exists := false
				for _, row := range m.rows {
					exists = exists || row.id == id
				}
				if exists {
					continue
				}
			}
			mustExec(t, db, `INSERT INTO records (id, ver, body) VALUES (?, ?, 'x')`, id, v)
			m.rows = append(m.rows, verRow{id, v})
		}
	}
	update := func(n int) {
		t.Helper()
		for range n {
			id, v := m.rows[r.IntN(len(m.rows))].id, tc.ver(r)
			mustExec(t, db, `UPDATE records SET ver = ? WHERE id = ?`, v, id)
			for k := range m.rows {
				if m.rows[k].id == id {
					m.rows[k].ver = v
				}
			}
		}
	}
	page := func() []Item {
		var items []Item
		for range 1 + r.IntN(40) {
			var id string
			if r.IntN(4) == 0 || len(m.rows) == 0 {
				id = fmt.Sprintf("never-%d", r.IntN(1000))
			} else {
				id = m.rows[r.IntN(len(m.rows))].id
			}
			switch r.IntN(3) {
			case 1:
				id = norm.NFC.String(id)
			case 2:
				id = norm.NFD.String(id)
			}
			items = append(items, Item{ID: id, Version: tc.ver(r)})
			if r.IntN(6) == 0 {
				items = append(items, items[len(items)-1]) // a repeat
			}
		}
		if r.IntN(5) == 0 {
			items = append(items, Item{ID: "\xed\xa0\x80", Version: tc.ver(r)})
		}
		return items
	}
	check := func(ix *Index, when string) {
		t.Helper()
		for range 8 {
			items := page()
			got, err := ix.Need(ctx, items)
			var bad *InvalidKeysError
			if err != nil && !errors.As(err, &bad) {
				t.Fatalf("%s: Need: %v", when, err)
			}
			if len(got) != len(items) {
				t.Fatalf("%s: %d answers for %d items", when, len(got), len(items))
			}
			for i, it := range items {
				want := m.answer(it.ID, it.Version)
				if it.ID == "\xed\xa0\x80" {
					want = NeedNew
				}
				if got[i] != want {
					t.Errorf("%s: Need(%+q, %v) = %v, want %v", when, it.ID, it.Version, got[i], want)
				}
			}
		}
	}

	insert(40)
	cfg := config{DBConfig: DBConfig{Path: path, Driver: appConfig(path).Driver},
		Source: Source{Table: "records", Column: "id", Version: "ver", Compare: tc.cmp, Snapshot: path + ".sfb"}}
	ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	check(ix, "before the filter serves")
	waitServing(t, ix)
	check(ix, "serving")
	insert(20)
	update(10)
	check(ix, "after inserts and updates")
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	update(5)
	ix = open(t, cfg)
	if !ix.Stats().Serving {
		t.Fatal("the reopened index does not serve from its snapshot")
	}
	check(ix, "reopened")
}

// TestNeedChecksTheVersionColumn: a version column that cannot order
// versions exactly is refused at open with a typed error, as a key column
// is, and nothing is written (a migration that breaks it later fails Need
// alone: TestNeedAfterTheVersionColumnIsRetyped); Need without one is ErrBadConfig; a version of the wrong type is a
// *VersionError naming its position, and nothing is answered.
func TestNeedChecksTheVersionColumn(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		ddl, version string
		want         error
	}{
		{`CREATE TABLE records (id TEXT PRIMARY KEY)`, "ver", ErrNoSource},
		{`CREATE TABLE records (id TEXT PRIMARY KEY, ver REAL)`, "ver", ErrInexactColumn},
		{`CREATE TABLE records (id TEXT PRIMARY KEY, ver BLOB)`, "ver", ErrInexactColumn},
		{`CREATE TABLE records (id TEXT PRIMARY KEY, ver TEXT COLLATE NOCASE)`, "ver", ErrInexactColumn},
		{`CREATE TABLE records (id TEXT PRIMARY KEY, v0 INTEGER, ver INTEGER GENERATED ALWAYS AS (v0 + 1))`, "ver", ErrInexactColumn},
		{`CREATE TABLE records (id TEXT PRIMARY KEY, ver INTEGER)`, "id", ErrBadConfig},
		{`CREATE TABLE records (id TEXT PRIMARY KEY, ver INTEGER)`, "v'", ErrBadConfig},
	} {
		path := filepath.Join(t.TempDir(), "app.db")
		mustExec(t, rawDB(t, path), c.ddl)
		cfg := appConfig(path)
		cfg.Version = c.version
		before := schema(t, path)
		ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
		if err == nil {
			_ = ix.Close(ctx)
			t.Errorf("%s, version %q: opened", c.ddl, c.version)
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%s, version %q: %v, want %v", c.ddl, c.version, err, c.want)
		}
		if !bytes.Equal(schema(t, path), before) {
			t.Errorf("%s, version %q: the refused open changed the schema", c.ddl, c.version)
		}
		if _, err := os.Stat(cfg.Snapshot); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s, version %q: the refused open left a file at the snapshot path: %v", c.ddl, c.version, err)
		}
		mustExec(t, rawDB(t, path), `INSERT INTO records (id) VALUES ('after the refusal')`) // the app goes on
	}

	path := appDB(t, "a")
	mustExec(t, rawDB(t, path), `ALTER TABLE records ADD COLUMN ver INTEGER`)
	ix := open(t, appConfig(path))
	if _, err := ix.Need(ctx, []Item{{ID: "a", Version: 1}}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("Need without Source.Version: %v", err)
	}
	cfg := appConfig(path)
	cfg.Version, cfg.Snapshot = "ver", ""
	ix = open(t, cfg)
	for _, v := range []any{"1", 1.5, nil, uint64(1 << 63)} {
		got, err := ix.Need(ctx, []Item{{ID: "a", Version: 1}, {ID: "b", Version: v}})
		var ve *VersionError
		if !errors.As(err, &ve) || ve.Index != 1 || got != nil {
			t.Errorf("version %v (%T) for an INTEGER column: %v, %v", v, v, got, err)
		}
	}
	type rev int64
	for _, v := range []any{int8(1), uint32(1), 1, rev(1)} {
		if got, err := ix.Need(ctx, []Item{{ID: "a", Version: v}}); err != nil || got[0] != NeedUpdate {
			t.Errorf("version %v (%T): %v, %v (the row's version is NULL: updated)", v, v, got, err)
		}
	}
}

// TestNeedAfterTheVersionColumnIsRetyped: a migration that makes the
// INTEGER version column TEXT (values copied) while the index is open
// never turns an integer asked into a text comparison ('9' >= '10'): the
// call is answered as if no stored version had the asked type
// (NeedUpdate) or refused (*VersionError), never Have; a version column
// dropped leaves Missing working and Need refused with a typed error.
func TestNeedAfterTheVersionColumnIsRetyped(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "app.db")
	db := rawDB(t, path)
	mustExec(t, db, `CREATE TABLE records (id TEXT PRIMARY KEY, ver INTEGER)`)
	mustExec(t, db, `INSERT INTO records VALUES ('a', 9), ('b', 10)`)
	cfg := appConfig(path)
	cfg.Version = "ver"
	ix := open(t, cfg)
	waitServing(t, ix)
	mustExec(t, db, `BEGIN; CREATE TABLE records_new (id TEXT PRIMARY KEY, ver TEXT);
		INSERT INTO records_new SELECT id, ver FROM records; DROP TABLE records;
		ALTER TABLE records_new RENAME TO records; COMMIT`)
	for round := range 3 {
		got, err := ix.Need(ctx, []Item{{ID: "a", Version: 10}, {ID: "b", Version: 11}})
		var ve *VersionError
		switch {
		case errors.As(err, &ve):
		case err != nil:
			t.Fatalf("round %d: %v", round, err)
		case got[0] != NeedUpdate || got[1] != NeedUpdate:
			t.Fatalf("round %d: %v after the retype: a is at '9', b at '10' (text now)", round, got)
		}
	}
	if got, err := ix.Need(ctx, []Item{{ID: "a", Version: "9"}, {ID: "b", Version: "11"}}); err != nil || got[0] != Have || got[1] != NeedUpdate {
		t.Errorf("text versions after the retype: %v, %v", got, err)
	}
	needDropColumn(t, db)
	mustExec(t, db, `ALTER TABLE records DROP COLUMN ver`)
	if got, err := missingList(ctx, ix, []string{"a", "c"}); err != nil || len(got) != 1 || got[0] != "c" {
		t.Errorf("Missing with the version column dropped: %q, %v", got, err)
	}
	if _, err := ix.Need(ctx, []Item{{ID: "a", Version: "9"}}); !errors.Is(err, ErrNoSource) {
		t.Errorf("Need with the version column dropped: %v, want ErrNoSource", err)
	}
}

// TestNeedSeesTheVersionColumnChange: an app that calls only Need sees
// the version column as the schema has it now: added after the index
// opened without it (a writable open refuses a missing one, a source of
// another process's schema is resolved at each change), or dropped right
// before the call (a typed error, not SQL built on a column that is gone).
func TestNeedSeesTheVersionColumnChange(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "app.db")
	db := rawDB(t, path)
	mustExec(t, db, `CREATE TABLE records (id TEXT PRIMARY KEY, ver INTEGER)`)
	mustExec(t, db, `INSERT INTO records VALUES ('a', 3)`)
	cfg := appConfig(path)
	cfg.Version = "ver"
	ix := open(t, cfg)
	waitServing(t, ix)
	needDropColumn(t, db)
	mustExec(t, db, `ALTER TABLE records DROP COLUMN ver`)
	if _, err := ix.Need(ctx, []Item{{ID: "a", Version: 3}}); !errors.Is(err, ErrNoSource) {
		t.Fatalf("Need right after the version column was dropped: %v, want ErrNoSource", err)
	}
	mustExec(t, db, `ALTER TABLE records ADD COLUMN ver INTEGER`)
	mustExec(t, db, `UPDATE records SET ver = 3`)
	if got, err := ix.Need(ctx, []Item{{ID: "a", Version: 3}, {ID: "b", Version: 1}}); err != nil || got[0] != Have || got[1] != NeedNew {
		t.Fatalf("Need once the version column is back: %v, %v", got, err)
	}
}
