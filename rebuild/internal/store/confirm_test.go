package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/syncfilter/syncfilter/normalize"
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

// TestConfirmVersionsAcrossStatements: keys asked with versions, too long
// for one statement, are confirmed in several (the last one alone, the
// single-key shape); each found key is older unless a stored version of
// the given one's type is at least it: integers as numbers, texts byte by
// byte (NULs, quotes, escapes and bytes not UTF-8 included), any other
// stored value never.
func TestConfirmVersionsAcrossStatements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, col := range []string{"INTEGER", "TEXT"} {
		db, app := testDB(t, `CREATE TABLE t (id TEXT PRIMARY KEY, ver `+col+`)`)
		s, _, err := db.Attach(ctx, Want{Table: "t", Column: "id", Version: "ver", Policy: normalize.Policy})
		if err != nil {
			t.Fatal(err)
		}
		var stored, given []any
		if col == "INTEGER" {
			stored = []any{int64(5), int64(5), int64(5), int64(-9), nil, "abc", []byte{1}, int64(math.MaxInt64)}
			given = []any{int64(4), int64(5), int64(6), int64(math.MinInt64), int64(1), int64(1), int64(1), int64(math.MaxInt64)}
		} else {
			stored = []any{"b\x00c", "a\"\\b", "\xff", "x", nil, []byte("zzz"), "2026-01-01T00:00:00Z", ""}
			given = []any{"b\x00b", "a\"\\b", "\xfe\xff", "y", "a", "a", "2026-01-01T00:00:00.1Z", ""}
		}
		want := []bool{true, true, false, true, false, false, false, true} // fresh
		if col == "TEXT" {
			// "\xff" sorts after "\xfe\xff"; "x" before "y"; and a
			// trimmed RFC 3339 time sorts after a longer one of later time.
			want = []bool{true, true, true, false, false, false, true, true}
		}
		var keys []string
		var vers []any
		var wantFound, wantOlder []int
		for i := range stored {
			k := fmt.Sprintf("%d-%s", i, strings.Repeat("k", listBytes/12)) // about two per statement
			if _, err := app.Exec(`INSERT INTO t (id, ver) VALUES (?, ?)`, k, stored[i]); err != nil {
				t.Fatal(err)
			}
			keys, vers = append(keys, k), append(vers, given[i])
			wantFound = append(wantFound, i)
			if !want[i] {
				wantOlder = append(wantOlder, i)
			}
		}
		keys, vers = append(keys, "never"), append(vers, given[0]) // the last statement holds it alone
		c, err := db.Reader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		found, older, err := c.Confirm(ctx, s, keys, vers, nil, false, nil, nil)
		db.Release(c)
		if err != nil || !slices.Equal(found, wantFound) || !slices.Equal(older, wantOlder) {
			t.Errorf("%s: found %v older %v (%v); want %v and %v", col, found, older, err, wantFound, wantOlder)
		}
	}
}

// TestCompareVersionsRefusesTheUnexpected: what versionsSQL never writes
// is an error, never a position or a freshness.
func TestCompareVersionsRefusesTheUnexpected(t *testing.T) {
	t.Parallel()
	vers := []any{int64(1), "a"}
	for _, bad := range []string{"", "[", "[null]", "[null,null,null]", `["0i1","x"]`, `["0i1.5","1ta"]`, `["0o"]`, `["0i1" ,"1ta"]`,
		`["0i1","1ta"]x`, `[nul,"1o"]`, `["0i1","1t\q"]`, `["1i1","0ta"]`, `["0i1","0ta"]`, `["0x","1o"]`, `["0ox","1o"]`, `[1,"1ta"]`, `["i1","1ta"]`, `["0","1o"]`} {
		if f, o, err := compareVersions(bad, 0, vers, nil, nil); !errors.Is(err, errKeyArray) {
			t.Errorf("compareVersions(%q) = %v, %v, %v", bad, f, o, err)
		}
	}
	f, o, err := compareVersions(`["0i1","1ta"]`, 3, vers, nil, nil)
	if err != nil || !slices.Equal(f, []int{3, 4}) || o != nil {
		t.Errorf("fresh both: %v %v %v", f, o, err)
	}
	f, o, err = compareVersions(`["0o",null]`, 0, vers, nil, nil)
	if err != nil || !slices.Equal(f, []int{0}) || !slices.Equal(o, []int{0}) {
		t.Errorf("older, none: %v %v %v", f, o, err)
	}
}
