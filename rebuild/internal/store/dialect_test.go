package store

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// FuzzPlainListRoundTrip: whatever bytes two keys hold, the parameters the
// library binds (keyArgs) reach SQLite through keysFrom as exactly those
// bytes at their positions, inPositions picks the positions
// appendSpelled lists, and the list SQLite writes for them (groupKeys)
// reads back as exactly those bytes (a NUL too, where SQLite 3.33's
// group_concat would end its text).
func FuzzPlainListRoundTrip(f *testing.F) {
	for _, s := range []string{"", "plain", "a\x00b", "\x00", `q"b\s/`, "x", "\xff\xfe", "😀", strings.Repeat("k", 1000)} {
		f.Add(s, "second", true)
		f.Add("", s, false)
	}
	db, err := testdriver.Open(filepath.Join(f.TempDir(), "fuzz.db"), testdriver.App{})
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	s := &Source{plain: true}
	f.Fuzz(func(t *testing.T, a, b string, secondSpelled bool) {
		if len(a)+len(b) > MaxStoredBytes {
			return
		}
		var list string
		q := `SELECT ` + s.groupKeys("v", "1") + ` FROM (SELECT CAST(?1 AS TEXT) AS v UNION ALL SELECT CAST(?2 AS TEXT))`
		if err := db.QueryRow(q, a, b).Scan(&list); err != nil {
			t.Fatal(err)
		}
		got, err := s.parseKeys(list, nil)
		if err != nil || len(got) != 2 || got[0] != a || got[1] != b {
			t.Fatalf("%+q, %+q came back as %+q, %v (from %q)", a, b, got, err, list)
		}
		sp := s.appendSpelled(nil, []string{a, b}, func(k string) bool { return k == b && secondSpelled })
		var spArg any = sp
		if sp == nil {
			spArg = []byte{}
		}
		q = `SELECT j.key, CAST(j.value AS BLOB), coalesce(` + s.inPositions("j.key", "?1") + `, 0) FROM ` + s.keysFrom(2, 2)
		rows, err := db.Query(q, spArg, a, b)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var keys []string
		var spelled []int64
		for rows.Next() {
			var pos int64
			var v []byte
			var in bool
			if err := rows.Scan(&pos, &v, &in); err != nil {
				t.Fatal(err)
			}
			if pos != int64(len(keys)) {
				t.Fatalf("position %d after %d keys", pos, len(keys))
			}
			keys = append(keys, string(v))
			if in {
				spelled = append(spelled, pos)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(keys, []string{a, b}) {
			t.Fatalf("%+q, %+q reached SQLite as %+q", a, b, keys)
		}
		want := []int64{}
		if secondSpelled && a != b {
			want = []int64{1}
		} else if secondSpelled {
			want = []int64{0, 1}
		}
		if !slices.Equal(spelled, want) && !(len(spelled) == 0 && len(want) == 0) {
			t.Fatalf("spelled positions %v, want %v (list %q)", spelled, want, sp)
		}
	})
}

// TestPlainListsRefuseTheUnexpected: a list the plain dialect never
// writes is an error, never a key or a position.
func TestPlainListsRefuseTheUnexpected(t *testing.T) {
	s := &Source{plain: true}
	for _, l := range []string{"y41", "x4", "x4G", "41", "x41y"} {
		if got, err := s.parseKeys(l, nil); err == nil {
			t.Errorf("parseKeys(%q) = %q, want an error", l, got)
		}
	}
	for _, l := range []string{"1,", ",1", "a", "1,,2", "9", "-1", "12345678901"} {
		if got, err := s.parsePositions(l, 0, 5, nil); err == nil {
			t.Errorf("parsePositions(%q) = %v, want an error", l, got)
		}
	}
	if got, err := s.parsePositions(nil, 10, 5, nil); err != nil || len(got) != 0 {
		t.Errorf("parsePositions(NULL) = %v, %v; want none", got, err)
	}
	if got, err := s.parsePositions("0,4,2", 10, 5, nil); err != nil || !slices.Equal(got, []int{10, 14, 12}) {
		t.Errorf("parsePositions = %v, %v", got, err)
	}
	vers := []any{int64(1), "b", int64(3)}
	for _, l := range []string{"x3169", "x3069x3069", "x3169x3069", "x3375", "x30", "x3378", "x306f31"} {
		if f, o, err := s.compareVersions(l, 0, vers, nil, nil); err == nil {
			t.Errorf("compareVersions(%q) = %v, %v; want an error", l, f, o)
		}
	}
	// 0i1 (fresh), 1tA (older: "A" < "b"), 2o (no version).
	f, o, err := s.compareVersions("x306931x317441x326f", 0, vers, nil, nil)
	if err != nil || !slices.Equal(f, []int{0, 1, 2}) || !slices.Equal(o, []int{1, 2}) {
		t.Errorf("compareVersions = %v, %v, %v", f, o, err)
	}
}
