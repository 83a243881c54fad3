package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/rebuild/ops"
)

// These tests run `rebuild --all`, `status --all` and `detach --all`
// through the binary, on databases whose sources an app attached with
// the library (OpenDB, DB.Index), as it would.

// multiDB creates app.db (WAL) with tables coll0..coll<n-1>(id TEXT
// PRIMARY KEY, body TEXT), each holding rows ids "c<i>-<j>".
func multiDB(t *testing.T, n, rows int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.db")
	db := sqlDB(t, path)
	defer db.Close()
	if _, err := db.Exec(`PRAGMA journal_mode = WAL`); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(fmt.Sprintf(`CREATE TABLE coll%d (id TEXT PRIMARY KEY, body TEXT)`, i)); err != nil {
			t.Fatal(err)
		}
		for j := range rows {
			if _, err := tx.Exec(fmt.Sprintf(`INSERT INTO coll%d (id) VALUES (?)`, i), fmt.Sprintf("c%d-%d", i, j)); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// attach opens the database as an app does and takes the index of each
// source (a "" table: the library's own, given the keys), then closes it
// all: the sources stay attached, with the snapshot paths their saves
// recorded.
func attach(t *testing.T, path string, srcs []rebuild.Source, own ...string) {
	t.Helper()
	ctx := context.Background()
	db, err := rebuild.OpenDB(ctx, rebuild.DBConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range srcs {
		ix, err := db.Index(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if err := ix.Wait(ctx); err != nil { // the first scan, in the background, saves
			t.Fatal(err)
		}
		if s.Table == "" {
			if err := ix.MarkFetched(ctx, own...); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// seriesOf returns the labelled samples of a metrics file by family and
// source ("table.column"), checking the exposition format and that every
// sample names its source.
func seriesOf(t *testing.T, path string) map[string]map[string]sample {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(raw), metricsHeader) {
		t.Fatalf("metrics file does not start with the header:\n%s", raw)
	}
	fams, err := parseExposition(raw)
	if err != nil {
		t.Fatalf("not the text exposition format: %v\n%s", err, raw)
	}
	out := map[string]map[string]sample{}
	for name, f := range fams {
		if f.typ != "gauge" || f.help == "" {
			t.Fatalf("family %s: type %q, help %q", name, f.typ, f.help)
		}
		out[name] = map[string]sample{}
		for _, s := range f.samples {
			src := s.labels["table"] + "." + s.labels["column"]
			if s.labels["table"] == "" || s.labels["column"] == "" {
				t.Fatalf("%s: a sample without its source's labels: %v", name, s.labels)
			}
			if _, dup := out[name][src]; dup {
				t.Fatalf("%s: two samples of %s", name, src)
			}
			out[name][src] = s
		}
	}
	return out
}

// allJSON is an entry of `rebuild --all --json`, as a script reads it.
type allJSON struct {
	Table, Column, Snapshot, Error, Reason string
	OK                                     bool
	Rows, Bytes                            int64
}

func TestAllUsage(t *testing.T) {
	t.Parallel()
	db := plainApp(t)
	before := state(t, db)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rebuild", "--db", db, "--all", "--table", "records"}, "does not go with --table"},
		{[]string{"rebuild", "--db", db, "--all", "--out", "x.sfb", "--column", "id"}, "does not go with --column, --out"},
		{[]string{"rebuild", "--db", db, "--all", "--capacity", "5000"}, "--capacity"},
		{[]string{"rebuild", "--all"}, "flag --db is required"},
		{[]string{"rebuild", "--db", db, "--table", "records", "--column", "id", "--out", "x.sfb", "--out-dir", "."}, "--out-dir goes with --all"},
		{[]string{"rebuild", "--db", db, "--all", "--out-dir", filepath.Join(t.TempDir(), "none")}, "is not a directory"},
		{[]string{"rebuild", "--db", db}, "or --db and --all"},
		{[]string{"status", "--db", db, "--all", "--snapshot", "x.sfb"}, "does not go with --snapshot"},
		{[]string{"detach", "--db", db, "--all", "--table", "records"}, "does not go with --table"},
	} {
		r := run(t, "", tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if state(t, db) != before {
		t.Fatal("a refused command changed the database")
	}
}

// TestRebuildAll: every source is rebuilt into the snapshot its last save
// recorded, or beside the database (in --out-dir) when none was; one
// source failing (its table dropped, its path refused) fails alone; the
// metrics file holds a series per source across runs, and the exit status
// says whether any failed.
func TestRebuildAll(t *testing.T) {
	t.Parallel()
	path := multiDB(t, 3, 300)
	dir := filepath.Dir(path)
	snaps, outDir := filepath.Join(dir, "snaps"), filepath.Join(dir, "out")
	for _, d := range []string{snaps, outDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c0 := filepath.Join(snaps, "c0.sfb")
	attach(t, path, []rebuild.Source{
		{Table: "coll0", Column: "id", Snapshot: c0},                             // recorded
		{Table: "coll1", Column: "id"},                                           // no snapshot: none recorded
		{Table: "coll2", Column: "id", Snapshot: filepath.Join(snaps, "c2.sfb")}, // its table goes
		{}, // the library's own table, no snapshot
	}, "own-1", "own-2", "cafe\u0301")
	if _, err := sqlDB(t, path).Exec(`DROP TABLE coll2`); err != nil {
		t.Fatal(err)
	}
	prom := filepath.Join(dir, "syncfilter.prom")
	all := []string{"rebuild", "--db", path, "--all", "--metrics-file", prom}

	// Run 1: coll1 and the own table have no snapshot recorded: --out-dir.
	r := run(t, "", append(all, "--out-dir", outDir)...).must(t, 1)
	c1, own := filepath.Join(outDir, "app.db.coll1.id.sfb"), filepath.Join(outDir, "app.db.fetched.sfb")
	for _, want := range []string{"coll0.id: wrote " + c0 + ":", "coll1.id: wrote " + c1 + ":", "syncfilter_fetched.key: wrote " + own + ": 3 rows, 3 keys"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("run 1: stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if last := lines[len(lines)-1]; !stamped.MatchString(last) || !strings.Contains(last, "3 of 4 sources of "+path+" rebuilt, 1 failed (coll2.id: source)") {
		t.Fatalf("run 1: last line %q", last)
	}
	if !strings.Contains(r.stderr, "coll2.id: ") || !strings.Contains(r.stderr, "syncfilter detach --db "+path+" --table coll2 --column id") {
		t.Fatalf("run 1: stderr %q", r.stderr)
	}
	for _, f := range []string{c0, c1, own} {
		run(t, "", "verify", f).must(t, 0)
	}
	m := seriesOf(t, prom)
	for src, want := range map[string]float64{"coll0.id": 300, "coll1.id": 300, "syncfilter_fetched.key": 3} {
		if got := m["syncfilter_rebuild_rows"][src].value; got != want {
			t.Fatalf("run 1: rows of %s = %v, want %v", src, got, want)
		}
		if got := m["syncfilter_rebuild_last_run_success"][src].value; got != 1 {
			t.Fatalf("run 1: %s last run success %v", src, got)
		}
	}
	if s, ok := m["syncfilter_rebuild_last_failure_reason"]["coll2.id"]; !ok || s.labels["reason"] != reasonSource || m["syncfilter_rebuild_last_run_success"]["coll2.id"].value != 0 {
		t.Fatalf("run 1: coll2's failure: %+v", m["syncfilter_rebuild_last_failure_reason"])
	}
	if _, ok := m["syncfilter_rebuild_last_success_timestamp_seconds"]["coll2.id"]; ok {
		t.Fatal("run 1: a success time for the source that never succeeded")
	}
	success0 := m["syncfilter_rebuild_last_success_timestamp_seconds"]["coll0.id"].value

	// Run 2, without --out-dir: coll1 goes where run 1 recorded it. An
	// app's file now sits at coll0's path: refused, --force or not.
	if err := os.WriteFile(c0, []byte("the app's notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	keep := untouched(t, c0)
	r = run(t, "", append(all, "--force", "--json")...).must(t, 1)
	keep()
	var results []allJSON
	if err := json.Unmarshal([]byte(r.stdout), &results); err != nil || len(results) != 4 {
		t.Fatalf("run 2 --json: %v\n%s", err, r.stdout)
	}
	got := map[string]allJSON{}
	for _, res := range results {
		got[res.Table+"."+res.Column] = res
	}
	if res := got["coll0.id"]; res.OK || res.Reason != reasonPath || !strings.Contains(res.Error, "not a snapshot") {
		t.Fatalf("run 2: coll0 %+v", res)
	}
	if res := got["coll1.id"]; !res.OK || res.Snapshot != c1 || res.Rows != 300 || res.Bytes == 0 {
		t.Fatalf("run 2: coll1 %+v", res)
	}
	if _, err := os.Stat(ops.DefaultSnapshot(path, "coll1", "id")); !os.IsNotExist(err) {
		t.Fatal("run 2 wrote coll1's snapshot beside the database, not where run 1 recorded it")
	}
	m = seriesOf(t, prom)
	if v := m["syncfilter_rebuild_last_success_timestamp_seconds"]["coll0.id"].value; v != success0 {
		t.Fatalf("run 2: coll0's last success %v, want the one carried over, %v", v, success0)
	}
	if m["syncfilter_rebuild_rows"]["coll0.id"].value != 300 || m["syncfilter_rebuild_last_failure_reason"]["coll0.id"].labels["reason"] != reasonPath {
		t.Fatalf("run 2: coll0's series: %+v", m)
	}
	if v := m["syncfilter_rebuild_consecutive_failures"]["coll2.id"].value; v != 2 {
		t.Fatalf("run 2: coll2's consecutive failures %v", v)
	}

	// Run 3: the dropped collection detached, the app's file gone: all
	// succeed, and coll2's series is gone with it.
	run(t, "", "detach", "--db", path, "--table", "coll2", "--column", "id").must(t, 0)
	if err := os.Remove(c0); err != nil {
		t.Fatal(err)
	}
	r = run(t, "", all...).must(t, 0)
	if !strings.Contains(r.stdout, "3 of 3 sources of "+path+" rebuilt, in ") {
		t.Fatalf("run 3: %q", r.stdout)
	}
	m = seriesOf(t, prom)
	if _, ok := m["syncfilter_rebuild_last_run_success"]["coll2.id"]; ok || len(m["syncfilter_rebuild_last_run_success"]) != 3 {
		t.Fatalf("run 3: series %v", m["syncfilter_rebuild_last_run_success"])
	}
	if m["syncfilter_rebuild_last_run_success"]["coll0.id"].value != 1 || m["syncfilter_rebuild_last_failure_reason"]["coll0.id"].labels["reason"] != reasonPath {
		t.Fatalf("run 3: coll0's series: %+v", m)
	}
	run(t, "", "verify", c0).must(t, 0)
}

// TestRebuildAllPathRules: before any scan, every source's path is
// checked; a FIFO, a path that two sources share, a directory that does
// not exist fail those sources alone; the metrics file may not be one of
// the snapshots.
func TestRebuildAllPathRules(t *testing.T) {
	t.Parallel()
	path := multiDB(t, 4, 50)
	dir := filepath.Dir(path)
	var srcs []rebuild.Source
	for i := range 4 {
		srcs = append(srcs, rebuild.Source{Table: fmt.Sprintf("coll%d", i), Column: "id", Snapshot: filepath.Join(dir, fmt.Sprintf("c%d.sfb", i))})
	}
	attach(t, path, srcs)
	raw := sqlDB(t, path)
	shared := filepath.Join(dir, "shared.sfb")
	for _, q := range []string{ // as a database restored elsewhere, or edited, may say
		`UPDATE syncfilter_sources SET snapshot = '` + shared + `' WHERE tbl IN ('coll1', 'coll2')`,
		`UPDATE syncfilter_sources SET snapshot = '` + filepath.Join(dir, "gone", "c3.sfb") + `' WHERE tbl = 'coll3'`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	r := run(t, "", "rebuild", "--db", path, "--all", "--metrics-file", shared)
	if r.code != exitUsage || !strings.Contains(r.stderr, "is the snapshot of coll1.id") {
		t.Fatalf("--metrics-file on a snapshot: exit %d, %q", r.code, r.stderr)
	}
	r = run(t, "", "rebuild", "--db", path, "--all", "--json").must(t, 1)
	var results []allJSON
	if err := json.Unmarshal([]byte(r.stdout), &results); err != nil || len(results) != 4 {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	if !results[0].OK {
		t.Fatalf("coll0 failed: %+v", results[0])
	}
	for _, res := range results[1:3] {
		if res.OK || res.Reason != reasonPath || !strings.Contains(res.Error, "also the snapshot of") {
			t.Fatalf("%s: %+v", res.Table, res)
		}
	}
	if res := results[3]; res.OK || !strings.Contains(res.Error, "no such file or directory") {
		t.Fatalf("coll3: %+v", res)
	}
	if _, err := os.Stat(shared); !os.IsNotExist(err) {
		t.Fatal("a snapshot two sources share was written")
	}
}

// TestStatusAndDetachAll: status --all lists every source read-only, with
// its recorded snapshot judged; detach --all detaches every source but one
// an app holds open (that one fails, the others go, the exit status says
// so), leaves the snapshot files, and with --force leaves sqlite_master as
// it was before the first attach.
func TestStatusAndDetachAll(t *testing.T) {
	t.Parallel()
	path := multiDB(t, 2, 100)
	pristine := state(t, path)
	snap := filepath.Join(filepath.Dir(path), "c0.sfb")
	attach(t, path, []rebuild.Source{{Table: "coll0", Column: "id", Snapshot: snap}, {Table: "coll1", Column: "id"}, {}}, "k-1")
	attached := state(t, path)

	r := run(t, "", "status", "--db", path, "--all", "--json").must(t, 0)
	var list []statusJSON
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 3 {
		t.Fatalf("status --all --json: %v\n%s", err, r.stdout)
	}
	if s := list[0]; s.Table != "coll0" || !s.Attached || s.Rows != 100 || s.Snapshot == nil || !s.Snapshot.Compatible || s.Snapshot.Path != snap {
		t.Fatalf("coll0: %+v (%+v)", s, s.Snapshot)
	}
	if s := list[1]; s.Table != "coll1" || s.Snapshot != nil || s.DefaultSnapshot != ops.DefaultSnapshot(path, "coll1", "id") {
		t.Fatalf("coll1: %+v", s)
	}
	if s := list[2]; s.Table != ownTable || s.Column != ownColumn || !s.Attached || s.Rows != 1 {
		t.Fatalf("own table: %+v", s)
	}
	r = run(t, "", "status", "--db", path, "--all").must(t, 0)
	if n := strings.Count(r.stdout, "\nsource          ") + 1; n != 3 || !strings.Contains(r.stdout, "snapshot        none recorded") {
		t.Fatalf("status --all: %d blocks\n%s", n, r.stdout)
	}
	if state(t, path) != attached {
		t.Fatal("status --all changed the database")
	}

	// An app has coll1 open: detach --all detaches it too (the app then
	// answers from SQLite until it opens the source again).
	ctx := context.Background()
	app, err := rebuild.OpenDB(ctx, rebuild.DBConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close(ctx)
	ix, err := app.Index(ctx, rebuild.Source{Table: "coll1", Column: "id"})
	if err != nil {
		t.Fatal(err)
	}
	// Its filter is built (no snapshot configured: a scan, whose lease
	// Detach would honour with ErrHeld) before the detach.
	if err := ix.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	r = run(t, "", "detach", "--db", path, "--all").must(t, 0)
	if !strings.Contains(r.stdout, "coll0.id from "+path+"; its snapshot "+snap+" is left in place") || !strings.Contains(r.stdout, "syncfilter_fetched.key from") ||
		!strings.Contains(r.stdout, "coll1.id from") {
		t.Fatalf("detach --all: %q", r.stdout)
	}
	if _, err := os.Stat(snap); err != nil {
		t.Fatalf("detach --all removed a snapshot file: %v", err)
	}
	if err := app.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := state(t, path); got != pristine {
		t.Fatalf("after detach --all:\n%s\nwant\n%s", got, pristine)
	}
	r = run(t, "", "detach", "--db", path, "--all").must(t, 0)
	if !strings.Contains(r.stdout, "nothing to detach") {
		t.Fatalf("detach --all of nothing: %q", r.stdout)
	}
}
