package syncbench

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

	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/rebuild/ops"
)

// The versions loop is the real loop of an engine whose server lists
// (id, version): pages of items, 5% of the stored ids updated on the
// server, answered by Index.Need and by the hand-written
// `SELECT id, ver FROM records WHERE id IN (…)` on the app's pool of two
// connections; after each page (and the network wait) the app inserts the
// new records and updates the updated ones in one transaction, right
// before the next call. Each run is made twice with one seed, the library
// first on every page in one, the IN-list in the other (twins): a page's
// ratio pairs the two first callers. Every answer of both sides is judged
// against the model.

// VersionsConfig is one run of the versions loop.
type VersionsConfig struct {
	Rows    int           // stored rows at the start
	Pages   int           // pages per run
	Min     int           // smallest page (random sizes Min..Max), unless Fixed
	Max     int           //
	Fixed   int           // every page this size (0: random)
	Wait    time.Duration // the network wait after each page
	Updated float64       // the share of stored ids the server updated (0.05)
	Seed    uint64
	Dir     string // where the base table is kept
	Driver  Driver
	ByID    bool // the library answers by id alone (Missing): what the versions cost it
}

// VersionsPage is one page of a twin.
type VersionsPage struct {
	Kind      string
	Size      int
	Lib, In   time.Duration
	New, Upd  int
	Confirmed uint64 // keys the library confirmed in SQLite (maybes)
}

// versionKinds take turns: re-sends (93% stored, of which Updated on the
// server), 70% new UUIDv4, 70% new UUIDv7.
var versionKinds = []struct {
	name   string
	stored float64
	shape  func(uint64) string
}{{"re-sends", 0.93, uuidV4}, {"70% new UUIDv4", 0.30, uuidV4}, {"70% new UUIDv7", 0.30, uuidV7}}

// RunVersionsTwins runs the twins of cfg and returns their pages: the
// library first, then the IN-list first.
func RunVersionsTwins(ctx context.Context, cfg VersionsConfig) (libFirst, inFirst []VersionsPage, err error) {
	base, err := versionsBase(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	if libFirst, err = runVersions(ctx, cfg, base, true); err != nil {
		return nil, nil, err
	}
	inFirst, err = runVersions(ctx, cfg, base, false)
	return libFirst, inFirst, err
}

// versionsBase builds (once per row count) records(id TEXT PRIMARY KEY,
// body TEXT, ver INTEGER NOT NULL) of Rows random UUIDs in random order,
// version 1 + i%1000, and its snapshot.
func versionsBase(ctx context.Context, cfg VersionsConfig) (string, error) {
	path := filepath.Join(cfg.Dir, fmt.Sprintf("versions-%d.db", cfg.Rows))
	if _, err := os.Stat(path + ".sfb"); err == nil {
		return path, nil
	}
	_ = os.Remove(path)
	db, err := openSQL(cfg.Driver, path, AppDSNOptions)
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT, ver INTEGER NOT NULL)`); err != nil {
		return "", err
	}
	order := rand.New(rand.NewPCG(uint64(cfg.Rows), 1)).Perm(cfg.Rows)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO records (id, body, ver) VALUES (?, ?, ?)`)
	if err != nil {
		return "", errors.Join(err, tx.Rollback())
	}
	for _, i := range order {
		if _, err := st.ExecContext(ctx, uuidV4(uint64(i)), Body, baseVer(i)); err != nil {
			return "", errors.Join(err, tx.Rollback())
		}
	}
	if err := tx.Commit(); err != nil {
		return "", err
	}
	drv, err := libDriver(cfg.Driver)
	if err != nil {
		return "", err
	}
	src := rebuild.Source{Table: Table, Column: Column, Version: "ver", Snapshot: path + ".sfb"}
	if _, err := ops.BuildSnapshot(ctx, rebuild.DBConfig{Path: path, Driver: drv, ConnParams: cfg.Driver.Params}, src); err != nil {
		return "", fmt.Errorf("build snapshot: %w", err)
	}
	return path, nil
}

func baseVer(i int) int64 { return int64(1 + i%1000) }

// versionsModel is what the app stores (local) and the pages' source.
type versionsModel struct {
	local  map[string]int64
	stored []string // every stored id
	next   map[string]uint64
	r      *rand.Rand
}

// versionsItem is one item of a page, with the answer the model expects.
type versionsItem struct {
	rebuild.Item
	want rebuild.Verdict
}

func (m *versionsModel) page(cfg VersionsConfig, n int) (string, []versionsItem) {
	kind := versionKinds[n%len(versionKinds)]
	size := cfg.Fixed
	if size == 0 {
		size = cfg.Min + m.r.IntN(cfg.Max-cfg.Min+1)
	}
	items := make([]versionsItem, size)
	for i := range items {
		if m.r.Float64() < kind.stored {
			id := m.stored[m.r.IntN(len(m.stored))]
			v, want := m.local[id], rebuild.Have
			if m.r.Float64() < cfg.Updated {
				v, want = v+1, rebuild.NeedUpdate
			}
			items[i] = versionsItem{rebuild.Item{ID: id, Version: v}, want}
			continue
		}
		id := kind.shape(uint64(cfg.Rows) + m.next[kind.name]<<20 + uint64(n)) // never stored: past every base row
		m.next[kind.name]++
		items[i] = versionsItem{rebuild.Item{ID: id, Version: int64(1)}, rebuild.NeedNew}
	}
	return kind.name, items
}

func runVersions(ctx context.Context, cfg VersionsConfig, base string, libFirst bool) ([]VersionsPage, error) {
	dir, err := os.MkdirTemp(cfg.Dir, "versions-run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "app.db")
	for _, ext := range []string{"", ".sfb"} {
		if err := CopyDB(base+ext, path+ext); err != nil {
			return nil, err
		}
	}
	m := &versionsModel{local: map[string]int64{}, next: map[string]uint64{}, r: rand.New(rand.NewPCG(cfg.Seed, 7))}
	for i := range cfg.Rows {
		id := uuidV4(uint64(i))
		m.local[id] = baseVer(i)
		m.stored = append(m.stored, id)
	}
	pool, err := openSQL(cfg.Driver, path, AppDSNOptions)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	pool.SetMaxOpenConns(AppPoolConns)
	pool.SetMaxIdleConns(AppPoolConns)
	drv, err := libDriver(cfg.Driver)
	if err != nil {
		return nil, err
	}
	ix, err := rebuild.Open(ctx, rebuild.DBConfig{Path: path, Driver: drv, DB: pool, ConnParams: cfg.Driver.Params},
		rebuild.Source{Table: Table, Column: Column, Version: "ver", Snapshot: path + ".sfb"})
	if err != nil {
		return nil, err
	}
	defer ix.Close(context.WithoutCancel(ctx))
	if err := ix.Wait(ctx); err != nil {
		return nil, err
	}
	in := map[int]*sql.Stmt{}
	defer func() {
		for _, st := range in {
			st.Close()
		}
	}()
	var out []VersionsPage
	for n := range cfg.Pages {
		kind, items := m.page(cfg, n)
		p := VersionsPage{Kind: kind, Size: len(items)}
		page := make([]rebuild.Item, len(items))
		for i := range items {
			page[i] = items[i].Item
		}
		before := ix.Stats().ConfirmedPositives + ix.Stats().FalsePositives
		lib := func() error {
			if cfg.ByID {
				ids := make([]string, len(page))
				for i := range page {
					ids[i] = page[i].ID
				}
				start := time.Now()
				missing, err := ix.Missing(ctx, ids)
				p.Lib = time.Since(start)
				for i, it := range items {
					if err == nil && missing[i] != (it.want == rebuild.NeedNew) {
						err = fmt.Errorf("the library's Missing answered %v for %s", missing[i], it.ID)
					}
				}
				return err
			}
			start := time.Now()
			got, err := ix.Need(ctx, page)
			p.Lib = time.Since(start)
			if err != nil {
				return fmt.Errorf("library: %w", err)
			}
			return judgeNeeds("the library", items, got)
		}
		inList := func() error {
			st, err := prepareVersions(ctx, pool, in, len(items))
			if err != nil {
				return err
			}
			start := time.Now()
			got, err := versionsInList(ctx, st, page)
			p.In = time.Since(start)
			if err != nil {
				return fmt.Errorf("in-list: %w", err)
			}
			return judgeNeeds("the IN-list", items, got)
		}
		sides := []func() error{lib, inList}
		if !libFirst {
			sides = []func() error{inList, lib}
		}
		for _, side := range sides {
			if err := side(); err != nil {
				return nil, fmt.Errorf("page %d (%s): %w", n, kind, err)
			}
		}
		p.Confirmed = ix.Stats().ConfirmedPositives + ix.Stats().FalsePositives - before
		if err := sleep(ctx, cfg.Wait); err != nil {
			return nil, err
		}
		if p.New, p.Upd, err = m.store(ctx, pool, items); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// store writes what the page fetched, in one transaction: the new
// records inserted, the updated ones' versions raised.
func (m *versionsModel) store(ctx context.Context, db *sql.DB, items []versionsItem) (ins, upd int, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, err
	}
	for _, it := range items {
		v := it.Version.(int64)
		switch it.want {
		case rebuild.NeedNew:
			if _, ok := m.local[it.ID]; ok {
				continue // a repeat within the page
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO records (id, body, ver) VALUES (?, ?, ?)`, it.ID, Body, v)
			m.local[it.ID] = v
			m.stored = append(m.stored, it.ID)
			ins++
		case rebuild.NeedUpdate:
			if m.local[it.ID] >= v {
				continue
			}
			_, err = tx.ExecContext(ctx, `UPDATE records SET ver = ?, body = ? WHERE id = ?`, v, Body, it.ID)
			m.local[it.ID] = v
			upd++
		}
		if err != nil {
			return 0, 0, errors.Join(err, tx.Rollback())
		}
	}
	return ins, upd, tx.Commit()
}

// prepareVersions prepares, once per size, the hand-written check.
func prepareVersions(ctx context.Context, db *sql.DB, in map[int]*sql.Stmt, n int) (*sql.Stmt, error) {
	if st := in[n]; st != nil {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, `SELECT id, ver FROM records WHERE id IN (?`+strings.Repeat(`, ?`, n-1)+`)`)
	if err != nil {
		return nil, err
	}
	in[n] = st
	return st, nil
}

// versionsInList answers a page as an engine without the library does:
// one IN-list of the ids (ASCII UUIDs: NFC changes none), versions
// compared in Go.
func versionsInList(ctx context.Context, st *sql.Stmt, page []rebuild.Item) ([]rebuild.Verdict, error) {
	args := make([]any, len(page))
	for i, it := range page {
		args[i] = it.ID
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	stored := make(map[string]int64, len(page))
	for rows.Next() {
		var id string
		var v int64
		if err := rows.Scan(&id, &v); err != nil {
			return nil, errors.Join(err, rows.Close())
		}
		stored[id] = v
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	out := make([]rebuild.Verdict, len(page))
	for i, it := range page {
		v, ok := stored[it.ID]
		switch {
		case !ok:
			out[i] = rebuild.NeedNew
		case v >= it.Version.(int64):
			out[i] = rebuild.Have
		default:
			out[i] = rebuild.NeedUpdate
		}
	}
	return out, nil
}

func judgeNeeds(side string, items []versionsItem, got []rebuild.Verdict) error {
	for i, it := range items {
		if got[i] != it.want {
			return fmt.Errorf("%s answered %v for %s at version %v, the model %v", side, got[i], it.ID, it.Version, it.want)
		}
	}
	return nil
}

// VersionsRatios pairs twins page by page: for each kind (and "every
// page"), the ratios of the library's time as first caller to the
// IN-list's as first caller, and the library's times.
func VersionsRatios(libFirst, inFirst []VersionsPage) (ratios map[string][]float64, lib map[string][]time.Duration) {
	ratios, lib = map[string][]float64{}, map[string][]time.Duration{}
	for i := range min(len(libFirst), len(inFirst)) {
		a, b := libFirst[i], inFirst[i]
		for _, k := range []string{a.Kind, "every page"} {
			ratios[k] = append(ratios[k], float64(a.Lib)/float64(b.In))
			lib[k] = append(lib[k], a.Lib)
		}
	}
	return ratios, lib
}
