package rebuild

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"

	"github.com/syncfilter/syncfilter/internal/testexec"
)

// appDB creates a SQLite file with an app table, records(id TEXT PRIMARY
// KEY, body TEXT), holding the given ids, and returns its path.
func appDB(t testing.TB, ids ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.db")
	db := rawDB(t, path)
	defer db.Close()
	mustExec(t, db, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`)
	insertIDs(t, db, ids...)
	return path
}

// rawDB opens path with plain database/sql, as another part of the app (or
// another tool) would.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := testdriver.Open(path, testdriver.App{JournalMode: "WAL", BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func mustExec(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func insertIDs(t testing.TB, db *sql.DB, ids ...string) {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := tx.Exec(`INSERT INTO records (id, body) VALUES (?, 'x')`, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%07d", prefix, i)
	}
	return out
}

// config is one collection's configuration, the database's and the
// source's, as the tests pass them around.
type config struct {
	DBConfig
	Source
}

// open opens an index and waits until its filter is ready (or its
// background work has failed: the test fails), as an app that needs the
// filter before its first call does (Wait).
func open(t testing.TB, cfg config) *Index {
	t.Helper()
	ix, err := Open(context.Background(), cfg.DBConfig, cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close(context.Background()) })
	if err := ix.Wait(context.Background()); err != nil && !errors.Is(err, ErrNotServing) {
		t.Fatal(err)
	}
	return ix
}

func appConfig(path string) config {
	return config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb"}}
}

// waitServing waits for a background rebuild to publish a filter.
func waitServing(t testing.TB, ix *Index) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ix.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for !ix.Stats().Serving {
		select {
		case <-ctx.Done():
			t.Fatal("no filter serving after 30s")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// expect checks Fetched and Missing against the reference set of fetched
// ids.
func expect(t testing.TB, ix *Index, fetched map[string]bool, probe []string) {
	t.Helper()
	ctx := context.Background()
	missing, err := missingList(ctx, ix, probe)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, k := range probe {
		if !fetched[k] {
			want = append(want, k)
		}
	}
	if fmt.Sprint(missing) != fmt.Sprint(want) {
		t.Fatalf("Missing = %d keys %.200v\nwant %d keys %.200v", len(missing), missing, len(want), want)
	}
	for _, k := range probe {
		got, err := ix.Fetched(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if got != fetched[k] {
			t.Fatalf("Fetched(%+q) = %v, want %v", k, got, fetched[k])
		}
	}
}

func set(keys ...[]string) map[string]bool {
	m := map[string]bool{}
	for _, ks := range keys {
		for _, k := range ks {
			m[k] = true
		}
	}
	return m
}

// startChild starts this test binary again, running only the test named
// run (a child-process helper that skips itself without its environment
// variables), with env added; wait returns its error and output.
func startChild(t *testing.T, run string, env ...string) (wait func() (string, error)) {
	t.Helper()
	cmd := testexec.Command(os.Args[0], "-test.run=^"+run+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func() (string, error) { err := cmd.Wait(); return out.String(), err }
}

// missingList returns the keys of page that Missing answers missing, in
// page order (a key the page repeats, as often as it repeats it).
func missingList(ctx context.Context, ix *Index, page []string) ([]string, error) {
	ans, err := ix.Missing(ctx, page)
	if ans == nil {
		return nil, err
	}
	if len(ans) != len(page) {
		return nil, fmt.Errorf("Missing answered %d positions of %d", len(ans), len(page))
	}
	var out []string
	for i, m := range ans {
		if m {
			out = append(out, page[i])
		}
	}
	return out, err
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// hooks are a test's hooks into one database, which it may set and clear
// after opening it: the database's knobs call through them (knobsOf).
type hooks struct {
	scanRow      atomic.Pointer[func(n int64) error]
	quiet        atomic.Pointer[func()]
	beforeCount  atomic.Pointer[func() error]
	countWait    atomic.Pointer[func()]
	catchUpChunk atomic.Pointer[func()]
}

// knobsOf returns k with its hooks calling through h.
func (h *hooks) knobsOf(k knobs) knobs {
	k.scanRow = func(n int64) error {
		if f := h.scanRow.Load(); f != nil {
			return (*f)(n)
		}
		return nil
	}
	k.quiet = func() {
		if f := h.quiet.Load(); f != nil {
			(*f)()
		}
	}
	k.beforeCount = func() error {
		if f := h.beforeCount.Load(); f != nil {
			return (*f)()
		}
		return nil
	}
	k.countWait = func() {
		if f := h.countWait.Load(); f != nil {
			(*f)()
		}
	}
	k.catchUpChunk = func() {
		if f := h.catchUpChunk.Load(); f != nil {
			(*f)()
		}
	}
	return k
}

// hooked returns cfg with its database's hooks calling through a new
// hooks value, and that value.
func hooked(cfg config) (config, *hooks) {
	h := &hooks{}
	cfg.knobs = h.knobsOf(cfg.knobs)
	return cfg, h
}
