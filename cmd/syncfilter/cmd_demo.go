package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/syncfilter/syncfilter/rebuild"
)

// The demo's sync: pages of server ids in pairs of one shape (size, share
// never fetched), so that the library and the IN-list each go first after
// the app's commit on one page of every pair.
var demoShapes = []struct{ size, newPct int }{
	{1000, 90}, {1000, 70}, {500, 50}, {200, 30}, {100, 10}, {1000, 0}, {50, 100}, {2000, 60},
}

// demoWait stands for the network: the fetch of a page's records.
const demoWait = 20 * time.Millisecond

// unicodeStems give some record ids non-ASCII names, as real apps have.
var unicodeStems = []string{"caf\u00e9", "\u30c7\u30fc\u30bf", "\u6587\u6863", "\ud55c\uad6d\uc5b4", "r\u00e9sum\u00e9", "\u00c5ngstr\u00f6m", "\U0001f4dd"}

func (a *app) demo(ctx context.Context, args []string) error {
	fs := a.flags("demo")
	dir := fs.String("dir", "", "keep the database and snapshot in `DIR` (default: a temporary directory, removed at the end)")
	records := fs.Int("records", 200_000, "records already fetched before the sync, `N`")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := exactly(pos, 0, "no arguments besides flags"); err != nil {
		return err
	}
	if *records < 1000 || *records > 20_000_000 {
		return usagef("invalid value %d for flag --records: want 1000 to 20000000", *records)
	}
	work := *dir
	if work == "" {
		if work, err = os.MkdirTemp("", "syncfilter-demo"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	d := &demoRun{app: a, rng: rand.New(rand.NewPCG(2026, 12)), db: filepath.Join(work, "app.db"), snap: filepath.Join(work, "app.db.records.id.sfb")}
	if _, err := os.Stat(d.db); err == nil {
		return usagef("%s exists: give an empty --dir", d.db)
	}
	return d.run(ctx, *records)
}

// demoRun is one run of the demo: its random source, and what the client
// really holds, which every answer is checked against.
type demoRun struct {
	*app
	rng      *rand.Rand
	db, snap string
	have     map[string]bool // canonical ids stored
	stored   []string        // ids as stored, to draw re-sent ids from
	next     int
}

func (d *demoRun) say(format string, args ...any) { fmt.Fprintf(d.stdout, format+"\n", args...) }

func (d *demoRun) newID() string {
	d.next++
	if d.next%40 == 0 {
		return fmt.Sprintf("%s-%07d", unicodeStems[d.next/40%len(unicodeStems)], d.next)
	}
	return fmt.Sprintf("note-%08x-%04x-%07d", d.rng.Uint32(), d.rng.Uint32()&0xffff, d.next)
}

func (d *demoRun) run(ctx context.Context, records int) error {
	d.say("syncfilter demo: a sync client that already fetched %d records walks %d pages of server ids.", records, 2*len(demoShapes))
	d.say("")

	// 1. The app's database, as it is before the library arrives.
	start := time.Now()
	appDB, err := sql.Open("sqlite3", "file:"+d.db+"?_journal_mode=WAL&_busy_timeout=5000")
	if err != nil {
		return err
	}
	defer appDB.Close()
	appDB.SetMaxOpenConns(2)
	nfd, uni, err := d.seed(ctx, appDB, records)
	if err != nil {
		return fmt.Errorf("seed database: %w", err)
	}
	d.say("1. The app's database %s: %d records, %d with Unicode ids, %d of those stored in NFD by another tool (%s).",
		d.db, records, uni, nfd, since(start))

	// 2. The library opens on the app's own pool; its background work
	// reports here as it happens.
	start = time.Now()
	log := slog.New(&demoEvents{d: d})
	ix, err := rebuild.Open(ctx, rebuild.DBConfig{Path: d.db, DB: appDB, Logger: log},
		rebuild.Source{Table: "records", Column: "id", Snapshot: d.snap})
	if err != nil {
		return err
	}
	d.say("2. Opened in %s: the table has rows the library has never seen, so it attaches two triggers and scans", since(start))
	d.say("   in the background, from the first call on (or a Wait); meanwhile every call is answered from SQLite,")
	d.say("   exactly. The demo waits for the scan, so that the filter works from the first page (an app needs not).")
	start = time.Now()
	if err := ix.Wait(ctx); err != nil {
		return err
	}
	st := ix.Stats()
	d.say("   The filter serves after %s: %d ids, sized for %d.", since(start), st.Items, st.Capacity)
	d.say("")

	// 3. The sync, against the IN-list the app would write without the
	// library: one prepared IN (...) per page, ids in NFC, on the same pool.
	d.say("3. Each page: ask, wait %s for the records (the network), store them. Of each pair of pages of one shape,", demoWait)
	d.say("   the library goes first after the app's commit on one and the IN-list on the other; only the side that")
	d.say("   went first is timed (the second reads a warm page cache).")
	d.say("")
	d.say("   page   ids   new  ruled out  confirmed  false+  library   IN-list")
	var libTimes, inTimes []time.Duration
	wrong, again := 0, 0
	prepared := map[int]*sql.Stmt{} // the IN-lists, by size, prepared untimed
	defer func() {
		for _, st := range prepared {
			st.Close()
		}
	}()
	for p := 0; p < 2*len(demoShapes); p++ {
		shape := demoShapes[p/2]
		page := d.page(shape.size, shape.newPct)
		libFirst := p%2 == 0
		before := ix.Stats()
		var missing []bool
		var lib, in time.Duration
		var inHave map[string]bool
		runLib := func() error {
			t0 := time.Now()
			missing, err = ix.Missing(ctx, page)
			lib = time.Since(t0)
			return err
		}
		if prepared[len(page)] == nil {
			q := `SELECT id FROM records WHERE id IN (?` + strings.Repeat(`,?`, len(page)-1) + `)`
			if prepared[len(page)], err = appDB.PrepareContext(ctx, q); err != nil {
				return err
			}
		}
		runIn := func() error {
			t0 := time.Now()
			inHave, err = inList(ctx, prepared[len(page)], page)
			in = time.Since(t0)
			return err
		}
		sides := []func() error{runLib, runIn}
		if !libFirst {
			sides[0], sides[1] = runIn, runLib
		}
		for _, side := range sides {
			if err := side(); err != nil {
				return err
			}
		}
		fetch := d.judge(page, missing, inHave, &wrong, &again)
		after := ix.Stats()
		libCol, inCol := fmt.Sprintf("%6.2f ms", ms(lib)), "        —"
		if libFirst {
			libTimes = append(libTimes, lib)
		} else {
			libCol, inCol = "        —", fmt.Sprintf("%6.2f ms", ms(in))
			inTimes = append(inTimes, in)
		}
		d.say("   %4d %5d %5d  %9d  %9d  %6d  %s %s", p+1, len(page), len(fetch),
			after.LookupsAvoided-before.LookupsAvoided, after.ConfirmedPositives-before.ConfirmedPositives,
			after.FalsePositives-before.FalsePositives, libCol, inCol)
		time.Sleep(demoWait)
		if err := d.store(ctx, appDB, fetch); err != nil {
			return fmt.Errorf("store page %d: %w", p+1, err)
		}
	}

	// 4. What it came to.
	st = ix.Stats()
	d.say("")
	d.say("4. The filter answered %d of %d questions alone (%.0f%%); %d maybes went to SQLite: %d fetched,",
		st.LookupsAvoided, st.Queries, 100*float64(st.LookupsAvoided)/float64(max(st.Queries, 1)),
		st.ConfirmedPositives+st.FalsePositives, st.ConfirmedPositives)
	d.say("   %d false positives caught (never counted as fetched); %d answered by SQLite alone.", st.FalsePositives, st.BypassLookups)
	d.say("   Median time of a page's call, first after the app's commit: library first %.2f ms, IN-list first %.2f ms (%.2fx).",
		ms(median(libTimes)), ms(median(inTimes)), float64(median(libTimes))/float64(max(median(inTimes), 1)))
	d.say("   Wrong answers: %d. The IN-list would have fetched %d records again: stored in NFD, listed in NFC.", wrong, again)
	start = time.Now()
	if err := ix.Close(ctx); err != nil {
		return err
	}
	info, err := os.Stat(d.snap)
	if err != nil {
		return err
	}
	d.say("5. Close saved the filter beside the database (%s, %s, %s): the next open loads it, and takes in", filepath.Base(d.snap), size(uint64(info.Size())), since(start))
	d.say("   what was stored since from the log. The file holds no id.")
	if wrong > 0 {
		return fmt.Errorf("demo: %d wrong answers", wrong)
	}
	return nil
}

// seed creates the app's table and its records.
func (d *demoRun) seed(ctx context.Context, db *sql.DB, records int) (nfd, uni int, err error) {
	d.have = make(map[string]bool, records*2)
	err = execTx(ctx, db, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE records (id TEXT PRIMARY KEY, title TEXT, fetched_at TEXT)`); err != nil {
			return err
		}
		st, err := tx.PrepareContext(ctx, `INSERT INTO records (id, title, fetched_at) VALUES (?, 'a record', datetime('now'))`)
		if err != nil {
			return err
		}
		defer st.Close()
		for range records {
			id := d.newID()
			stored := id
			if !isASCII(id) {
				if uni++; uni%3 == 0 { // another tool wrote this one decomposed (NFD)
					stored, nfd = norm.NFD.String(id), nfd+1
				}
			}
			if _, err := st.ExecContext(ctx, stored); err != nil {
				return err
			}
			d.have[id] = true
			d.stored = append(d.stored, stored)
		}
		return nil
	})
	return nfd, uni, err
}

// page returns size server ids: newPct percent never fetched, the rest
// re-sent, in NFC (some of them stored in NFD).
func (d *demoRun) page(size, newPct int) []string {
	out := make([]string, size)
	for i := range out {
		if d.rng.IntN(100) < newPct {
			out[i] = d.newID()
		} else {
			out[i] = norm.NFC.String(d.stored[d.rng.IntN(len(d.stored))])
		}
	}
	return out
}

// judge checks the library's answers and returns the new ids to fetch,
// each once; again counts the stored ids the IN-list did not find.
func (d *demoRun) judge(page []string, missing []bool, inHave map[string]bool, wrong, again *int) []string {
	var fetch []string
	listed := map[string]bool{}
	for i, id := range page {
		c := norm.NFC.String(id)
		if missing[i] == d.have[c] {
			*wrong++
		}
		if d.have[c] && !inHave[id] {
			*again++
		}
		if missing[i] && !listed[c] {
			listed[c] = true
			fetch = append(fetch, id)
		}
	}
	return fetch
}

// store writes fetched records as the app always does, in its own
// transaction: the triggers log them.
func (d *demoRun) store(ctx context.Context, db *sql.DB, ids []string) error {
	return execTx(ctx, db, func(tx *sql.Tx) error {
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO records (id, title, fetched_at) VALUES (?, 'fetched', datetime('now'))`, id); err != nil {
				return err
			}
			d.have[norm.NFC.String(id)] = true
			d.stored = append(d.stored, id)
		}
		return nil
	})
}

// inList is what the app would write without the library: one IN (...)
// per page, prepared on its own pool, the ids in NFC.
func inList(ctx context.Context, st *sql.Stmt, page []string) (map[string]bool, error) {
	args := make([]any, len(page))
	for i, id := range page {
		args[i] = norm.NFC.String(id)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		have[id] = true
	}
	return have, rows.Err()
}

// demoEvents prints the library's background events as they happen.
type demoEvents struct{ d *demoRun }

func (h *demoEvents) Enabled(context.Context, slog.Level) bool { return true }
func (h *demoEvents) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *demoEvents) WithGroup(string) slog.Handler            { return h }
func (h *demoEvents) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "table" {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		}
		return true
	})
	h.d.say("   [background] %s:%s", r.Message, b.String())
	return nil
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func execTx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func isASCII(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r >= 0x80 }) < 0
}

func since(t time.Time) string { return time.Since(t).Round(time.Millisecond).String() }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
