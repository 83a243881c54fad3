package rebuild

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// BenchmarkAfterAddColumn: the first page after the app's ALTER TABLE …
// ADD COLUMN, run on the app's pool (a special page of the sync loop):
// the library, handed that pool, against the IN-list prepared on it.
// 100,000 rows; pages of 10 and 100 ids, half of them stored. Untimed
// between pages: the column dropped again and three pages, so that every
// timed page follows one ADD COLUMN on a table of the same shape.
//
//	go test -run '^$' -bench AfterAddColumn -benchtime 100x -count 3 ./rebuild
func BenchmarkAfterAddColumn(b *testing.B) {
	for _, size := range []int{10, 100} {
		const rows = 100_000
		page, want := make([]string, size), size/2
		for i := range page {
			page[i] = benchID(uint64(i) * 97 % rows) // stored
			if i%2 == 1 {
				page[i] = benchID(rows + uint64(i)) // new
			}
		}
		for _, side := range []string{"syncfilter", "in-list"} {
			b.Run(fmt.Sprintf("page=%d/%s", size, side), func(b *testing.B) {
				app := migrationDB(b, rows)
				var ask func() (int, error)
				if side == "syncfilter" {
					ix, err := Open(context.Background(), DBConfig{Path: app.path, DB: app.db}, Source{Table: "records", Column: "id", Snapshot: app.path + ".sfb"})
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { _ = ix.Close(context.Background()) })
					if err := ix.Wait(context.Background()); err != nil {
						b.Fatal(err)
					}
					ask = func() (int, error) {
						missing, err := ix.Missing(context.Background(), page)
						return countTrue(missing), err
					}
				} else {
					l := &inListLookup{db: app.db, stmts: map[int]*sql.Stmt{}}
					b.Cleanup(func() {
						for _, s := range l.stmts {
							_ = s.Close()
						}
					})
					ask = func() (int, error) {
						missing, err := l.missing(page)
						return len(missing), err
					}
				}
				check := func() {
					if n, err := ask(); err != nil || n != want {
						b.Fatalf("%d missing, want %d: %v", n, want, err)
					}
				}
				for range 20 {
					check()
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					app.exec(b, `ALTER TABLE records ADD COLUMN extra TEXT`)
					b.StartTimer()
					check()
					b.StopTimer()
					app.exec(b, `ALTER TABLE records DROP COLUMN extra`)
					for range 3 {
						check()
					}
					b.StartTimer()
				}
				b.StopTimer() // the closes in Cleanup are not the page's
			})
		}
	}
}

// migrationApp is an app's database of the benchmark's ids in WAL mode,
// on a pool of two connections.
type migrationApp struct {
	db   *sql.DB
	path string
}

func migrationDB(b *testing.B, rows uint64) migrationApp {
	path := filepath.Join(b.TempDir(), "app.db")
	db, err := testdriver.Open(path, testdriver.App{JournalMode: "WAL"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(2)
	a := migrationApp{db: db, path: path}
	a.exec(b, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`)
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for i := range rows {
		if _, err := tx.Exec(`INSERT INTO records VALUES (?, 'payload')`, benchID(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return a
}

func (a migrationApp) exec(b *testing.B, q string) {
	if _, err := a.db.Exec(q); err != nil {
		b.Fatal(err)
	}
}
