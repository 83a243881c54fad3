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
// positions found, counted from the first key asked, are appended to what
// the earlier ones found.
func TestConfirmAcrossStatements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, app := testDB(t, `CREATE TABLE t (id TEXT PRIMARY KEY)`)
	s := attach(t, db, "t", "id", false)
	var keys []string
	var want []int
	for i := range 7 {
		k := fmt.Sprintf("%d-%s", i, strings.Repeat("x", listBytes/12)) // about two per statement
		keys = append(keys, k)
		if i != 3 {
			if _, err := app.Exec(`INSERT INTO t (id) VALUES (?)`, k); err != nil {
				t.Fatal(err)
			}
			want = append(want, i)
		}
	}
	c, err := db.Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Release(c)
	for _, prior := range [][]int{nil, {99}} {
		got, _, err := c.Confirm(ctx, s, keys, nil, nil, false, slices.Clone(prior), nil)
		if err != nil {
			t.Fatalf("prior %v: %v", prior, err)
		}
		if !slices.Equal(got, append(slices.Clone(prior), want...)) {
			t.Fatalf("prior %v: found %v, want %v after the prior ones", prior, got, want)
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
	got, _, err := c.Confirm(ctx, s, many, nil, nil, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantMany := make([]int, 0, 21)
	for i := range 20 {
		wantMany = append(wantMany, i)
	}
	if wantMany = append(wantMany, len(many)-1); !slices.Equal(got, wantMany) {
		t.Fatalf("found %d of %d keys asked, want %d", len(got), len(many), len(wantMany))
	}
}
