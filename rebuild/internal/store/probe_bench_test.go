package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// BenchmarkProbeAfterCommit: one probe, with 10 keys to confirm (7
// stored) or none (the freshness check alone), on a reader of the
// library's and on the app's pool, warm and as the first statement after
// the app's commit of one row on that pool (which empties a reader's
// page cache, not the committing connection's; used one call at a time,
// the pool holds one connection, so the probe there lands on the one
// that committed). 100,000 rows in WAL mode; the mark one entry behind
// the head, so that each probe reads a tail of one entry.
//
//	go test -run '^$' -bench ProbeAfterCommit -benchtime 3000x -count 3 ./rebuild/internal/store
func BenchmarkProbeAfterCommit(b *testing.B) {
	ctx := context.Background()
	lib, app := testDB(b, `PRAGMA journal_mode=WAL`, `CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT)`)
	app.SetMaxOpenConns(2)
	id := func(i int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", i*2654435761%(1<<32), i) }
	tx, err := app.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100_000 {
		if _, err := tx.Exec(`INSERT INTO t VALUES (?, 'payload')`, id(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	d, err := NewDriver(testdriver.Driver())
	if err != nil {
		b.Fatal(err)
	}
	db, err := Open(ctx, lib.Path.Real, Options{Driver: d, Readers: 2, App: app})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(db.Close)
	s := attach(b, db, "t", "id", false)
	if _, err := app.Exec(`INSERT INTO t VALUES ('later-0', 'x')`); err != nil { // a log entry behind every head
		b.Fatal(err)
	}
	keys := make([]string, 10)
	for i := range keys {
		keys[i] = id(i * 7919)
		if i%3 == 2 {
			keys[i] = id(10_000_000 + i) // new
		}
	}
	c, err := db.Reader(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Release(c) })
	schema, err := c.Schema(ctx)
	if err != nil {
		b.Fatal(err)
	}
	stored := 0
	for _, n := range []int{10, 0} {
		for _, mode := range []string{"warm", "after-commit"} {
			for _, on := range []string{"reader", "app"} {
				b.Run(fmt.Sprintf("keys=%d/%s/%s", n, mode, on), func(b *testing.B) {
					for b.Loop() {
						b.StopTimer()
						h, err := c.Head(ctx, s)
						if err != nil {
							b.Fatal(err)
						}
						mark := h.Seq - 1
						if mode == "after-commit" {
							stored++
							if _, err := app.Exec(`INSERT INTO t VALUES (?, 'x')`, fmt.Sprintf("later-%d", stored)); err != nil {
								b.Fatal(err)
							}
							mark = h.Seq
						}
						b.StartTimer()
						var pr Probe
						o := ProbeOptions{After: mark, Chunk: 1024, Keys: keys[:n], Schema: schema}
						if on == "app" {
							err = db.AppProbe(ctx, s, o, &pr)
						} else {
							err = c.Probe(ctx, s, o, &pr)
						}
						if err != nil || n > 0 && (!pr.Confirmed || len(pr.Found) != 7) {
							b.Fatalf("probe: %v, confirmed %v, found %v", err, pr.Confirmed, pr.Found)
						}
					}
				})
			}
		}
	}
}
