package store

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkConfirmDialects: one confirmation of a page of stored keys in
// the JSON dialect (where the driver's SQLite has it: else plain again)
// and in the plain one (Knobs.PlainSQL): what the plain dialect's lists
// cost.
func BenchmarkConfirmDialects(b *testing.B) {
	ctx := context.Background()
	for _, plain := range []bool{false, true} {
		db, app := testDBWith(b, Knobs{PlainSQL: plain}, `CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT)`)
		for i := range 20000 {
			if _, err := app.Exec(`INSERT INTO t (id, body) VALUES (?, 'x')`, fmt.Sprintf("%08d-%s", i*7919%20000, "0190a1b2-c3d4-7e5f-8a9b")); err != nil {
				b.Fatal(err)
			}
		}
		s := attach(b, db, "t", "id", false)
		dialect := "json"
		if s.plain {
			dialect = "plain"
		}
		for _, n := range []int{10, 100, 1000} {
			keys := make([]string, n)
			for i := range keys {
				keys[i] = fmt.Sprintf("%08d-%s", (i*31)%20000, "0190a1b2-c3d4-7e5f-8a9b")
			}
			b.Run(fmt.Sprintf("page=%d/%s", n, dialect), func(b *testing.B) {
				c, err := db.Reader(ctx)
				if err != nil {
					b.Fatal(err)
				}
				defer db.Release(c)
				b.ReportAllocs()
				for b.Loop() {
					found, _, err := c.Confirm(ctx, s, keys, nil, nil, false, nil, nil)
					if err != nil || len(found) != n {
						b.Fatalf("found %d of %d: %v", len(found), n, err)
					}
				}
			})
		}
	}
}
