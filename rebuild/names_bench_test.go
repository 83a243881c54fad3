package rebuild

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// BenchmarkNamesLoop: a sync loop over Unicode names, the app's pool of
// two connections handed over. 100,000 ASCII rows and 2,000 accented
// names (the even ones stored in NFD); each page asks 10 or 100 names in
// NFC, 60% stored and 40% new, and the app stores the new ones (half in
// NFD) right before the next call, untimed. The library against an
// IN-list binding each name in NFC and in NFD on a pool of the same shape. Every
// answer is checked.
//
//	go test -run '^$' -bench NamesLoop -benchtime 2000x ./rebuild
func BenchmarkNamesLoop(b *testing.B) {
	const rows, names = 100_000, 2_000
	for _, size := range []int{10, 100} {
		for _, side := range []string{"syncfilter", "in-list"} {
			b.Run(fmt.Sprintf("page=%d/%s", size, side), func(b *testing.B) {
				app := migrationDB(b, rows)
				app.addNames(b, names)
				var ask func([]string) ([]bool, error)
				if side == "syncfilter" {
					ix, err := Open(context.Background(), DBConfig{Path: app.path, DB: app.db},
						Source{Table: "records", Column: "id", Snapshot: app.path + ".sfb"})
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { _ = ix.Close(context.Background()) })
					if err := ix.Wait(context.Background()); err != nil {
						b.Fatal(err)
					}
					ask = func(page []string) ([]bool, error) { return ix.Missing(context.Background(), page) }
				} else {
					l := &inListBoth{db: app.db, stmts: map[int]*sql.Stmt{}}
					b.Cleanup(func() {
						for _, s := range l.stmts {
							_ = s.Close()
						}
					})
					ask = l.missing
				}
				ins, err := app.db.Prepare(`INSERT INTO records VALUES (?, 'payload')`)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = ins.Close() })
				next := names // the next new name
				page, truth := make([]string, size), make([]bool, size)
				var fresh []string // the last page's new names, stored before the next call
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					for j, name := range fresh {
						if j%2 == 0 {
							name = norm.NFD.String(name)
						}
						if _, err := ins.Exec(name); err != nil {
							b.Fatal(err)
						}
					}
					fresh = fresh[:0]
					for j := range page {
						if truth[j] = j%5 >= 3; truth[j] { // new
							page[j] = accentedName(next)
							fresh = append(fresh, page[j])
							next++
						} else {
							page[j] = accentedName((i*size + j) * 7 % names)
						}
					}
					b.StartTimer()
					missing, err := ask(page)
					b.StopTimer()
					if err != nil || !slices.Equal(missing, truth) {
						b.Fatalf("page %d: missing %v, want %v: %v", i, missing, truth, err)
					}
					b.StartTimer()
				}
			})
		}
	}
}
