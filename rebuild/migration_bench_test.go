package rebuild

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/normalize"
)

// BenchmarkAfterAddColumn: the first page after the app's ALTER TABLE …
// ADD COLUMN (a special page of the sync loop), the library on the app's
// pool of two connections against the IN-list prepared on the same pool,
// 100,000 rows. Untimed between pages: the column dropped again and three
// pages, so that every timed page follows one ADD COLUMN on a table of
// the same shape.
//
//	go test -run '^$' -bench AfterAddColumn -benchtime 100x -count 3 ./rebuild
func BenchmarkAfterAddColumn(b *testing.B) {
	for _, size := range []int{10, 100} {
		for _, side := range []string{"syncfilter", "in-list"} {
			b.Run(fmt.Sprintf("page=%d/%s", size, side), func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "app.db")
				app, err := testdriver.Open(path, testdriver.App{JournalMode: "WAL"})
				if err != nil {
					b.Fatal(err)
				}
				defer app.Close()
				app.SetMaxOpenConns(2)
				if _, err := app.Exec(`CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`); err != nil {
					b.Fatal(err)
				}
				tx, _ := app.Begin()
				for i := uint64(0); i < 100_000; i++ {
					if _, err := tx.Exec(`INSERT INTO records VALUES (?, 'x')`, benchID(i)); err != nil {
						b.Fatal(err)
					}
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				page := make([]string, size)
				for i := range page {
					page[i] = benchID(uint64(i * 97))
				}
				var ask func() error
				if side == "syncfilter" {
					ix, err := Open(context.Background(), DBConfig{Path: path, DB: app}, Source{Table: "records", Column: "id", Snapshot: path + ".sfb"})
					if err != nil {
						b.Fatal(err)
					}
					defer ix.Close(context.Background())
					if err := ix.Wait(context.Background()); err != nil {
						b.Fatal(err)
					}
					ask = func() error { _, err := ix.Missing(context.Background(), page); return err }
				} else {
					q := `SELECT id FROM records WHERE id IN (?`
					for range size - 1 {
						q += `, ?`
					}
					st, err := app.Prepare(q + `)`)
					if err != nil {
						b.Fatal(err)
					}
					ask = func() error {
						args := make([]any, len(page))
						for i, id := range page {
							args[i], _ = normalize.String(id)
						}
						rows, err := st.Query(args...)
						if err != nil {
							return err
						}
						n := 0
						for rows.Next() {
							n++
						}
						return rows.Close()
					}
				}
				for range 20 {
					if err := ask(); err != nil {
						b.Fatal(err)
					}
				}
				time.Sleep(50 * time.Millisecond)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					if _, err := app.Exec(`ALTER TABLE records ADD COLUMN extra TEXT`); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if err := ask(); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					if _, err := app.Exec(`ALTER TABLE records DROP COLUMN extra`); err != nil {
						b.Fatal(err)
					}
					for range 3 {
						if err := ask(); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
				}
			})
		}
	}
}
