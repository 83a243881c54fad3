package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestReadLogByRange: ReadLog hands over what reading the log row by row
// gives (text keys; with nonASCII those that may be stored in another
// spelling, a NUL before the accent included), whatever gaps deletions
// left (a prefix, gaps narrower and wider than a chunk), BLOB keys, keys
// longer than the short-key bound (read one by one), keys too long to
// stand for any key (skipped); the sequence numbers it reports rise and
// end at upTo.
func TestReadLogByRange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, app := testDBWith(t, Knobs{LogChunk: 8, ShortKey: 64}, `CREATE TABLE t (id TEXT)`, `CREATE INDEX t_id ON t (id)`)
	s := attach(t, db, "t", "id", false)

	for i := range 200 {
		k := fmt.Sprintf("k%03d", i)
		switch {
		case i%7 == 3:
			k = "café-" + k
		case i%11 == 5:
			k = "nul\x00x/Sa\u0303o-" + k
		case i == 120:
			k = strings.Repeat("é", 1000) // long
		case i == 121:
			k = strings.Repeat("a", 100) + k // long, ASCII
		case i == 122:
			k = strings.Repeat("t", MaxStoredBytes+1) // never read
		}
		if _, err := app.Exec(`INSERT INTO t (id) VALUES (?)`, k); err != nil {
			t.Fatal(err)
		}
	}
	// BLOB entries, then gaps: a prefix, one narrower than a chunk, one
	// wider, and the end of the log.
	if _, err := app.Exec(`INSERT INTO ` + s.Log + ` (key, tag) VALUES (x'6b313030', 1), (x'ff', 2)`); err != nil {
		t.Fatal(err)
	}
	for _, del := range []string{`seq <= 5`, `seq BETWEEN 30 AND 33`, `seq BETWEEN 50 AND 90`, `seq > 195`} {
		if _, err := app.Exec(`DELETE FROM ` + s.Log + ` WHERE ` + del); err != nil {
			t.Fatal(err)
		}
	}
	c, err := db.Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Release(c)
	for _, nonASCII := range []bool{false, true} {
		for _, after := range []uint64{0, 3, 31, 49, 120, 194, 202} {
			const upTo = 202
			var want []string
			rows, err := app.Query(`SELECT key FROM `+s.Log+` WHERE seq > ? AND seq <= ? AND typeof(key) = 'text' AND length(CAST(key AS BLOB)) <= ? ORDER BY seq`, after, upTo, MaxStoredBytes)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var k string
				if err := rows.Scan(&k); err != nil {
					t.Fatal(err)
				}
				if !nonASCII || !isASCII(k) || strings.ContainsRune(k, 0) {
					want = append(want, k)
				}
			}
			rows.Close()
			var got []string
			read := after
			err = c.ReadLog(ctx, s, after, upTo, nonASCII, func(r uint64, keys []string) error {
				if r <= read || r > upTo {
					t.Fatalf("after %d: read up to %d after %d (upTo %d)", after, r, read, upTo)
				}
				read = r
				got = append(got, keys...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if after < upTo && read != upTo {
				t.Fatalf("after %d: stopped at %d, want %d", after, read, upTo)
			}
			if !slices.Equal(distinct(got), distinct(want)) || len(got) != len(want) {
				t.Fatalf("nonASCII %v, after %d: %d keys, want %d", nonASCII, after, len(got), len(want))
			}
		}
	}
}

// isASCII reports whether s holds only ASCII characters.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
