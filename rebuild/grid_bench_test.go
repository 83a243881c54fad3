package rebuild

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"

	"github.com/syncfilter/syncfilter/normalize"
	"golang.org/x/text/unicode/norm"
)

// BenchmarkGrid: Missing against the best hand-written
// SQLite check, one `SELECT id FROM records WHERE id IN (...)` per page
// (ids NFC-normalized first, as a careful engineer would), for pages of
// 10, 100, 1,000 and 10,000 ids with 0, 50, 90 and 100% of them new:
//
//	go test -run '^$' -bench 'Grid|FetchedOne' -benchmem -count 6 ./rebuild

// gridPage returns size ids, newPct percent of them not in the table,
// spread evenly; page p of a run uses other ids than page p-1.
func gridPage(p, size, newPct int) []string {
	out := make([]string, size)
	for i := range out {
		n := uint64(p*size + i)
		if (i*newPct)/100 != ((i+1)*newPct)/100 { // exactly newPct% of the page, spread evenly
			out[i] = benchID(benchRows + n) // new
		} else {
			out[i] = benchID(n * 7919 % benchRows) // already fetched
		}
	}
	return out
}

// inListLookup is the baseline: one IN (...) query per page.
type inListLookup struct {
	db    *sql.DB
	stmts map[int]*sql.Stmt
}

func newInList(b *testing.B, path string) *inListLookup {
	db, err := testdriver.Open(path, testdriver.App{BusyTimeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	l := &inListLookup{db: db, stmts: map[int]*sql.Stmt{}}
	b.Cleanup(func() {
		for _, s := range l.stmts {
			_ = s.Close()
		}
		_ = db.Close()
	})
	return l
}

// missing returns the ids of page not in the table, in order.
func (l *inListLookup) missing(page []string) ([]string, error) {
	st, ok := l.stmts[len(page)]
	if !ok {
		var err error
		q := `SELECT id FROM records WHERE id IN (?` + strings.Repeat(`, ?`, len(page)-1) + `)`
		if st, err = l.db.Prepare(q); err != nil {
			return nil, err
		}
		l.stmts[len(page)] = st
	}
	args := make([]any, len(page))
	canon := make([]string, len(page))
	for i, id := range page {
		c, err := normalize.String(id)
		if err != nil {
			return nil, err
		}
		canon[i], args[i] = c, c
	}
	rows, err := st.Query(args...)
	if err != nil {
		return nil, err
	}
	found := make(map[string]struct{}, len(page))
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		found[id] = struct{}{}
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	var out []string
	for i, id := range page {
		if _, ok := found[canon[i]]; !ok {
			out = append(out, id)
		}
	}
	return out, nil
}

func BenchmarkGrid(b *testing.B) {
	path := benchDB(b)
	for _, size := range []int{10, 100, 1000, 10_000} {
		for _, newPct := range []int{0, 50, 90, 100} {
			pages := make([][]string, 32)
			want := size * newPct / 100
			for p := range pages {
				pages[p] = gridPage(p, size, newPct)
			}
			name := fmt.Sprintf("page=%d/new=%d%%", size, newPct)
			b.Run(name+"/syncfilter", func(b *testing.B) {
				ix := benchIndex(b, path)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					missing, err := ix.Missing(context.Background(), pages[i%len(pages)])
					if err != nil {
						b.Fatal(err)
					}
					if n := countTrue(missing); n != want {
						b.Fatalf("%d missing, want %d", n, want)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/id")
			})
			b.Run(name+"/in-list", func(b *testing.B) {
				l := newInList(b, path)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					missing, err := l.missing(pages[i%len(pages)])
					if err != nil {
						b.Fatal(err)
					}
					if len(missing) != want {
						b.Fatalf("%d missing, want %d", len(missing), want)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/id")
			})
		}
	}
}

// BenchmarkFetchedOne asks about one id per op, stored or new, against a
// prepared `SELECT 1 FROM records WHERE id = ?` (id NFC-normalized first):
// the library on its own readers, and with a pool of the app's handed
// over (DBConfig.DB), where its lookup then runs.
func BenchmarkFetchedOne(b *testing.B) {
	path := benchDB(b)
	for _, kind := range []string{"stored", "new"} {
		id := func(i int) string {
			if kind == "new" {
				return benchID(benchRows + uint64(i))
			}
			return benchID(uint64(i) * 7919 % benchRows)
		}
		ids := make([]string, 4096)
		for i := range ids {
			ids[i] = id(i)
		}
		b.Run(kind+"/syncfilter", func(b *testing.B) {
			timeFetched(b, benchIndex(b, path), ids, kind == "stored")
		})
		b.Run(kind+"/syncfilter-apppool", func(b *testing.B) {
			app, err := testdriver.Open(path, testdriver.App{BusyTimeout: 10 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = app.Close() })
			ix, err := Open(context.Background(), DBConfig{Path: path, DB: app}, Source{Table: "records", Column: "id", Snapshot: path + ".sfb"})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = ix.Close(context.Background()) })
			if err := ix.Wait(context.Background()); err != nil {
				b.Fatal(err)
			}
			timeFetched(b, ix, ids, kind == "stored")
		})
		b.Run(kind+"/prepared-select", func(b *testing.B) {
			stmt := preparedLookup(b, path)
			for _, id := range ids {
				var one int
				_ = stmt.QueryRow(id).Scan(&one)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c, _ := normalize.String(ids[i%len(ids)])
				var one int
				err := stmt.QueryRow(c).Scan(&one)
				if err != nil && !errors.Is(err, sql.ErrNoRows) || (err == nil) != (kind == "stored") {
					b.Fatal(kind, err)
				}
			}
		})
	}
}

// timeFetched times Fetched of ids in turn, each answered as want, after
// the warm-up every side has: whichever runs first would pay the colder
// caches.
func timeFetched(b *testing.B, ix *Index, ids []string, want bool) {
	for _, id := range ids {
		_, _ = ix.Fetched(context.Background(), id)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ok, err := ix.Fetched(context.Background(), ids[i%len(ids)])
		if err != nil || ok != want {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkUnknownSpellings: what the first page holding an id that may
// be stored in another spelling pays when the stored spellings are not
// yet known (a table the library never attached; opened read-only here,
// so that no scan starts): every spelling of each such key is asked
// (walked from the key), nothing of the table read; the first walk of
// the process also builds the decomposition table read backwards (about
// 1 ms, once, before the timed pages). The table holds 100,000 such ids
// (one in four stored in NFD) beside 100,000 ASCII ones; the same page
// with walking off (a read of the table's ids outside ASCII), the next
// page, and a first page of ASCII ids, for scale:
//
//	go test -run '^$' -bench UnknownSpellings -benchtime 20x ./rebuild
func BenchmarkUnknownSpellings(b *testing.B) {
	const names = 100_000
	path := filepath.Join(b.TempDir(), "app.db")
	app, err := testdriver.Open(path, testdriver.App{BusyTimeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	name := func(i int) string { return fmt.Sprintf("caf\u00e9-%06d", i) }
	stored := func(i int) string {
		if i%4 == 0 {
			return norm.NFD.String(name(i))
		}
		return name(i)
	}
	if _, err := app.Exec(`PRAGMA journal_mode = WAL; CREATE TABLE records (id TEXT PRIMARY KEY)`); err != nil {
		b.Fatal(err)
	}
	tx, err := app.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for i := range names {
		if _, err := tx.Exec(`INSERT INTO records VALUES (?), (?)`, stored(i), fmt.Sprintf("ascii-%06d", i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	_ = app.Close()
	spelled := []string{name(4), name(5), name(names + 1)} // stored NFD, stored NFC, never stored
	ascii := []string{"ascii-000004", "ascii-000005", "ascii-x"}
	for _, c := range []struct {
		name         string
		before, page []string
		noWalk       bool
	}{
		{"first-spelled-page", nil, spelled, false}, {"first-spelled-page-read", nil, spelled, true},
		{"next-spelled-page", spelled, spelled, false}, {"first-ascii-page", nil, ascii, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for range b.N {
				b.StopTimer()
				ix, err := Open(ctx, DBConfig{Path: path, Driver: testdriver.Driver(), ReadOnly: true, knobs: knobs{noWalk: c.noWalk}}, Source{Table: "records", Column: "id"})
				if err != nil {
					b.Fatal(err)
				}
				if c.before != nil {
					if _, err := ix.Missing(ctx, c.before); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				missing, err := ix.Missing(ctx, c.page)
				b.StopTimer()
				if err != nil || missing[0] || missing[1] || !missing[2] {
					b.Fatalf("Missing(%q) = %v, %v", c.page, missing, err)
				}
				if err := ix.Close(ctx); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
