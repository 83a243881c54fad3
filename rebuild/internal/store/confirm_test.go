package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestConfirmAcrossStatements: keys too many or too long for one
// confirmation statement are confirmed in several, and every statement's
// keys found are appended to what the earlier ones found (the first key
// of a later array is not taken for a missing comma).
func TestConfirmAcrossStatements(t *testing.T) {
	ctx := context.Background()
	db, app := testDB(t, `CREATE TABLE t (id TEXT PRIMARY KEY)`)
	s := attach(t, db, "t", "id", false)
	var keys, want []string
	for i := range 7 {
		k := fmt.Sprintf("%d-%s", i, strings.Repeat("x", listBytes/12)) // about two per statement
		keys = append(keys, k)
		if i != 3 {
			if _, err := app.Exec(`INSERT INTO t (id) VALUES (?)`, k); err != nil {
				t.Fatal(err)
			}
			want = append(want, k)
		}
	}
	c, err := db.Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Release(c)
	for _, prior := range [][]string{nil, {"found-before"}} {
		got, err := c.Confirm(ctx, s, keys, nil, false, slices.Clone(prior))
		if err != nil {
			t.Fatalf("prior %q: %v", prior, err)
		}
		if !slices.Equal(got, append(slices.Clone(prior), want...)) {
			t.Fatalf("prior %q: found %d keys, want %d after the prior ones", prior, len(got), len(want))
		}
	}
	// Many short keys: more than one statement's worth.
	many := make([]string, confirmMax+10)
	for i := range many {
		many[i] = fmt.Sprintf("m%06d", i)
	}
	tx, err := app.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range many[:20] {
		if _, err := tx.Exec(`INSERT INTO t (id) VALUES (?)`, k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(`INSERT INTO t (id) VALUES (?)`, many[len(many)-1]); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := c.Confirm(ctx, s, many, nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if wantMany := append(slices.Clone(many[:20]), many[len(many)-1]); !slices.Equal(got, wantMany) {
		t.Fatalf("found %d of %d keys asked, want %d", len(got), len(many), len(wantMany))
	}
}
