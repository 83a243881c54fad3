package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/syncfilter/syncfilter/rebuild"
)

// The demo's sync pages: how many server ids each lists and which share
// of them the client has never fetched.
var demoPages = []int{95, 90, 90, 80, 60, 50, 30, 10, 5, 0}

const demoPageSize = 5000

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
	d := &demoRun{app: a, rng: rand.New(rand.NewPCG(2026, 11)), db: filepath.Join(work, "app.db"), snap: filepath.Join(work, "records.sfb")}
	if _, err := os.Stat(d.db); err == nil {
		return usagef("%s exists: give an empty --dir", d.db)
	}
	return d.run(ctx, *records)
}

// demoRun is one run of the demo; it owns its random source and the
// reference set of what the client really has.
type demoRun struct {
	*app
	rng      *rand.Rand
	db, snap string
	have     map[string]bool // canonical ids the client holds: the truth the answers are checked against
	stored   []string        // ids as stored, to draw already-fetched ids from
	next     int             // counter for new ids
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
	d.say("syncfilter demo: a sync client that already fetched %d records walks %d pages of %d server ids.", records, len(demoPages), demoPageSize)
	d.say("")

	// 1. The app's database, as it is before the library arrives.
	start := time.Now()
	raw, err := sql.Open("sqlite3", "file:"+d.db+"?_journal_mode=WAL&_busy_timeout=5000")
	if err != nil {
		return err
	}
	defer raw.Close()
	d.have = make(map[string]bool, records*2)
	nfd, uni := 0, 0
	err = execTx(ctx, raw, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE records (id TEXT PRIMARY KEY, title TEXT, fetched_at TEXT)`); err != nil {
			return err
		}
		st, err := tx.PrepareContext(ctx, `INSERT INTO records (id, title, fetched_at) VALUES (?, 'a record', datetime('now'))`)
		if err != nil {
			return err
		}
		defer st.Close()
		for i := 0; i < records; i++ {
			id := d.newID()
			stored := id
			if !isASCII(id) {
				uni++
				if uni%3 == 0 { // another tool wrote this one decomposed (NFD)
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
	if err != nil {
		return fmt.Errorf("seed database: %w", err)
	}
	d.say("1. seeded %s: %d records, %d with Unicode ids, %d of those stored in NFD by another tool (%s)",
		d.db, records, uni, nfd, since(start))

	// 2. The library attaches, scans once, and saves a snapshot.
	start = time.Now()
	ix, err := rebuild.Open(ctx, rebuild.DBConfig{Path: d.db, Driver: raw.Driver()}, rebuild.Source{Table: "records", Column: "id", Snapshot: d.snap})
	if err != nil {
		return err
	}
	defer ix.Close(context.WithoutCancel(ctx))
	st := ix.Stats()
	info, _ := os.Stat(d.snap)
	var snapBytes int64
	if info != nil {
		snapBytes = info.Size()
	}
	d.say("2. built the filter from one scan: sized for %d ids at %.0f%%, snapshot %s (%s), %s",
		st.Capacity, 100*st.TargetFPR, d.snap, size(uint64(snapBytes)), since(start))
	d.say("")

	// 3. Sync: for each page, ask which ids are missing, with the filter
	// and the way one would without it, then fetch the missing ones.
	lookup, err := raw.PrepareContext(ctx, `SELECT 1 FROM records WHERE id = ?`)
	if err != nil {
		return err
	}
	defer lookup.Close()
	d.say("3. sync   ids    new  filter alone  confirmed  false+  with filter  prepared SELECT per id")
	var withTotal, withoutTotal time.Duration
	naiveWrong, wrong, rebuilds := 0, 0, 0
	for p, newPct := range demoPages {
		page := d.page(newPct)
		before := ix.Stats()
		t0 := time.Now()
		missing, err := ix.Missing(ctx, page)
		if err != nil {
			return err
		}
		with := time.Since(t0)

		t0 = time.Now()
		naive := 0
		for _, id := range page {
			var one int
			switch err := lookup.QueryRowContext(ctx, id).Scan(&one); {
			case errors.Is(err, sql.ErrNoRows):
				naive++
				if d.have[norm.NFC.String(id)] {
					naiveWrong++ // stored under another spelling: fetched twice
				}
			case err != nil:
				return err
			}
		}
		without := time.Since(t0)
		withTotal, withoutTotal = withTotal+with, withoutTotal+without

		var fetch []string // each new record once, however often the page lists it
		listed := map[string]bool{}
		for i, id := range page {
			if missing[i] == d.have[norm.NFC.String(id)] {
				wrong++ // a stored id answered missing, or a new one fetched
			}
			if missing[i] && !listed[norm.NFC.String(id)] {
				listed[norm.NFC.String(id)] = true
				fetch = append(fetch, id)
			}
		}
		after := ix.Stats()
		d.say("   page %2d %5d %5d  %12d  %9d  %6d  %9.2f ms  %9.2f ms",
			p+1, len(page), len(fetch), after.LookupsAvoided-before.LookupsAvoided,
			after.ConfirmedPositives-before.ConfirmedPositives, after.FalsePositives-before.FalsePositives,
			ms(with), ms(without))

		// Fetch the missing records and store them as the app always
		// did, on its own connection: the triggers log them, and the next
		// call catches the filter up.
		err = func() error {
			tx, err := raw.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback() }()
			for _, id := range fetch {
				if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO records (id, title, fetched_at) VALUES (?, 'fetched', datetime('now'))`, id); err != nil {
					return err
				}
				d.have[norm.NFC.String(id)] = true
				d.stored = append(d.stored, id)
			}
			return tx.Commit()
		}()
		if err != nil {
			return fmt.Errorf("fetch page %d: %w", p+1, err)
		}

		// A Bloom filter only fills up: when its estimated rate passes
		// twice the target, rebuild it (a cron job would do this offline).
		if st := ix.Stats(); st.RebuildDue {
			t0 := time.Now()
			if err := ix.Rebuild(ctx); err != nil {
				return err
			}
			d.say("   filter full (estimated false-positive rate %.1f%%): rebuilt for %d ids in %s",
				100*st.EstimatedFPR, ix.Stats().Capacity, since(t0))
			rebuilds++
		}
	}

	st = ix.Stats()
	asked := st.Queries
	d.say("")
	d.say("4. the filter answered %d of %d questions alone (%.1f%%): %d SQLite lookups avoided.",
		st.LookupsAvoided, asked, 100*float64(st.LookupsAvoided)/float64(max(asked, 1)), st.LookupsAvoided)
	d.say("   %d maybes went to SQLite: %d confirmed fetched, %d false positives caught (never counted as fetched).",
		st.ConfirmedPositives+st.FalsePositives, st.ConfirmedPositives, st.FalsePositives)
	d.say("   time per page: %.2f ms with the filter, %.2f ms with a prepared SELECT per id (%.1fx).",
		ms(withTotal)/float64(len(demoPages)), ms(withoutTotal)/float64(len(demoPages)), float64(withoutTotal)/float64(max(withTotal, 1)))
	d.say("   wrong answers: %d. The SELECT per id would have fetched %d records again: they are stored in NFD, listed in NFC.",
		wrong, naiveWrong)
	d.say("   filter health: %.1f%% full, estimated false-positive rate %.2f%%, %d rebuild(s) during the sync.",
		100*st.FillRatio, 100*st.EstimatedFPR, rebuilds)
	if wrong > 0 {
		return fmt.Errorf("demo: %d wrong answers", wrong)
	}
	return nil
}

// page returns server ids: newPct percent never fetched, the rest already
// fetched, some of those listed in NFC while stored in NFD.
func (d *demoRun) page(newPct int) []string {
	out := make([]string, demoPageSize)
	for i := range out {
		if d.rng.IntN(100) < newPct {
			out[i] = d.newID()
			continue
		}
		out[i] = norm.NFC.String(d.stored[d.rng.IntN(len(d.stored))]) // servers speak NFC
	}
	return out
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
