package rebuild

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/text/unicode/norm"
)

// BenchmarkAfterTableRebuild: the first page after the app changes its
// table by SQLite's 12-step procedure (lang_altertable.html#otheralter:
// in one transaction a new table of the same columns, the rows copied,
// the old table dropped, the new one renamed, its index made again; no
// foreign keys, so no steps 1, 10 and 12), run on the app's pool: the
// library, handed that pool, against an IN-list prepared on it that binds
// each id in NFC and in NFD (an app without the library whose ids may be
// stored in either). The library's triggers go with the old table.
// 100,000 ASCII rows and 2,000 accented names (half of them stored in
// NFD); pages of 10 and 100 ids, half of them stored, one in ten a stored
// name asked in NFC (the 10-id page's stored in NFD) and one in ten a new
// name. Every answer is checked. Untimed between pages: the library
// waited ready again (the filter serving) and three pages, so that every
// timed page follows one table rebuild on a table of the same shape, the
// library serving before it. Beside ns/op: the slowest page (max-ns),
// and for the library what the timed pages logged (stored-spellings
// reads, filters dropped) and how long it took to serve again (ready-ns).
// The library's follower usually sees the rebuild while the app's COMMIT
// still runs (its checkpoint) and drops the filter before the page: the
// page is answered from SQLite (drops/op 0), and the re-attach and the
// scan start at its end; spellreads/op says whether it read the table's
// stored spellings.
// syncfilter-at-once is the library with the repair started at once, not
// after the page (the ablation's deferredrepair off).
// syncfilter-cron is the library with AutoRebuild off (a rebuild job run
// by cron): its rebuild, run untimed between pages, does not share the
// two cores with the page.
//
//	go test -run '^$' -bench AfterTableRebuild -benchtime 20x ./rebuild
func BenchmarkAfterTableRebuild(b *testing.B) {
	const rows, names = 100_000, 2_000
	for _, size := range []int{10, 100} {
		page, truth := make([]string, size), make([]bool, size)
		for i := range page {
			truth[i] = i%2 == 1 // missing: new
			switch {
			case i%10 == 0:
				page[i] = accentedName(i / 10 * 199 % names) // stored (NFD when even), asked in NFC
			case i%10 == 1:
				page[i] = accentedName(names + i) // new
			case i%2 == 0:
				page[i] = benchID(uint64(i) * 97 % rows) // stored
			default:
				page[i] = benchID(rows + uint64(i)) // new
			}
		}
		for _, side := range []string{"syncfilter", "syncfilter-at-once", "syncfilter-cron", "in-list"} {
			b.Run(fmt.Sprintf("page=%d/%s", size, side), func(b *testing.B) {
				app := migrationDB(b, rows)
				app.addNames(b, names)
				app.exec(b, `CREATE INDEX records_body ON records (body)`)
				var (
					ask    func() ([]bool, error)
					settle = func() {}
					events *eventCounts
					ix     *Index
				)
				if side != "in-list" {
					events = &eventCounts{n: map[string]int{}}
					cron := side == "syncfilter-cron"
					var err error
					ix, err = Open(context.Background(), DBConfig{Path: app.path, DB: app.db, Logger: slog.New(events), knobs: knobs{noDeferredRepair: side == "syncfilter-at-once"}},
						Source{Table: "records", Column: "id", Snapshot: app.path + ".sfb", NoAutoRebuild: cron})
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { _ = ix.Close(context.Background()) })
					settle = func() {
						if cron {
							if err := ix.Rebuild(context.Background()); err != nil {
								b.Fatal(err)
							}
						}
						if err := ix.Wait(context.Background()); err != nil {
							b.Fatal(err)
						}
						if st := ix.Stats(); !st.Serving || !st.Attached {
							b.Fatalf("after Wait: serving %v, attached %v, upkeep %q", st.Serving, st.Attached, st.Upkeep)
						}
					}
					settle()
					ask = func() ([]bool, error) { return ix.Missing(context.Background(), page) }
				} else {
					l := &inListBoth{db: app.db, stmts: map[int]*sql.Stmt{}}
					b.Cleanup(func() {
						for _, s := range l.stmts {
							_ = s.Close()
						}
					})
					ask = func() ([]bool, error) { return l.missing(page) }
				}
				check := func() {
					if missing, err := ask(); err != nil || !slices.Equal(missing, truth) {
						b.Fatalf("missing %v, want %v: %v", missing, truth, err)
					}
				}
				for range 20 {
					check()
				}
				var slowest, ready time.Duration
				var reads, drops int
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					app.rebuildTable(b)
					r0, d0 := events.count(spellingsRead), events.count(filterDropped)
					b.StartTimer()
					start := time.Now()
					check()
					took := time.Since(start)
					b.StopTimer()
					slowest = max(slowest, took)
					reads += events.count(spellingsRead) - r0
					drops += events.count(filterDropped) - d0
					start = time.Now()
					settle()
					ready += time.Since(start)
					for range 3 {
						check()
					}
					b.StartTimer()
				}
				b.StopTimer() // the closes in Cleanup are not the page's
				b.ReportMetric(float64(slowest.Nanoseconds()), "max-ns")
				if ix != nil {
					b.ReportMetric(float64(reads)/float64(b.N), "spellreads/op")
					b.ReportMetric(float64(drops)/float64(b.N), "drops/op")
					b.ReportMetric(float64(ready.Nanoseconds())/float64(b.N), "ready-ns")
				}
			})
		}
	}
}

// accentedName is the k-th name of the benchmark, in NFC: a first and a
// last name that both change under NFD, and k. The table stores names
// k < its count, the even ones in NFD.
func accentedName(k int) string {
	first := []string{"José", "Zoë", "Inès", "Noémie", "Andrés", "Hélène", "Ramón", "Jürgen", "François", "Agnès"}
	last := []string{"García", "Müller", "Ibáñez", "Dvořák", "Lefèvre", "Núñez", "Gómez", "Åström", "Šimić", "Kovač"}
	return norm.NFC.String(fmt.Sprintf("%s %s %05d", first[k%len(first)], last[k/len(first)%len(last)], k))
}

// addNames stores the names 0 … n-1, the even ones in NFD.
func (a migrationApp) addNames(b *testing.B, n int) {
	tx, err := a.db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for k := range n {
		name := accentedName(k)
		if norm.NFD.String(name) == name {
			b.Fatalf("%q is its own NFD", name)
		}
		if k%2 == 0 {
			name = norm.NFD.String(name)
		}
		if _, err := tx.Exec(`INSERT INTO records VALUES (?, 'payload')`, name); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// rebuildTable is SQLite's 12-step table change on the app's pool, to a
// table of the same columns, its index made again.
func (a migrationApp) rebuildTable(b *testing.B) {
	tx, err := a.db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE records_new (id TEXT PRIMARY KEY, body TEXT)`,
		`INSERT INTO records_new SELECT * FROM records`,
		`DROP TABLE records`,
		`ALTER TABLE records_new RENAME TO records`,
		`CREATE INDEX records_body ON records (body)`,
	} {
		if _, err := tx.Exec(q); err != nil {
			_ = tx.Rollback()
			b.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// inListBoth is the IN-list of an app without the library whose ids may
// be stored in NFC or in NFD: one query per page binding both spellings
// of every id, the rows found compared in NFC.
type inListBoth struct {
	db    *sql.DB
	stmts map[int]*sql.Stmt
}

// missing reports for each id of page whether no row holds it in NFC or NFD.
func (l *inListBoth) missing(page []string) ([]bool, error) {
	st, ok := l.stmts[len(page)]
	if !ok {
		var err error
		q := `SELECT id FROM records WHERE id IN (?` + strings.Repeat(`, ?`, 2*len(page)-1) + `)`
		if st, err = l.db.Prepare(q); err != nil {
			return nil, err
		}
		l.stmts[len(page)] = st
	}
	args := make([]any, 0, 2*len(page))
	canon := make([]string, len(page))
	for i, id := range page {
		canon[i] = norm.NFC.String(id)
		args = append(args, canon[i], norm.NFD.String(id))
	}
	rows, err := st.Query(args...)
	if err != nil {
		return nil, err
	}
	found := make(map[string]bool, len(page))
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		found[norm.NFC.String(id)] = true
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	out := make([]bool, len(page))
	for i := range page {
		out[i] = !found[canon[i]]
	}
	return out, nil
}

// The library's log messages the benchmark counts.
const (
	spellingsRead = "read the table's stored spellings"
	filterDropped = "filter dropped"
)

// eventCounts is a slog.Handler counting the library's events by message.
type eventCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (e *eventCounts) Enabled(context.Context, slog.Level) bool { return true }

func (e *eventCounts) Handle(_ context.Context, r slog.Record) error {
	e.mu.Lock()
	e.n[r.Message]++
	e.mu.Unlock()
	return nil
}

func (e *eventCounts) WithAttrs([]slog.Attr) slog.Handler { return e }
func (e *eventCounts) WithGroup(string) slog.Handler      { return e }

// count is how many events of msg were logged (0 on a nil e).
func (e *eventCounts) count(msg string) int {
	if e == nil {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n[msg]
}
