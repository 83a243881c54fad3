package rebuild

import (
	"context"
	"sync/atomic"
	"testing"
)

// TestQuietAnswersSeeEveryCommit: a call whose keys the filter rules out
// skips its probe only while nothing committed since the last probe on
// its connection (PRAGMA data_version). Every kind of commit ends that:
// the app's rows on its own connection, another process's rows, a
// migration that rebuilds the table, and each is answered exactly by
// the very next call. The test first checks that the quiet answer is
// taken at all, so that it tests something.
func TestQuietAnswersSeeEveryCommit(t *testing.T) {
	ctx := context.Background()
	path := appDB(t, ids("old", 1000)...)
	ix := open(t, appConfig(path))
	waitServing(t, ix)
	var quiet atomic.Int64
	testHookQuiet = func() { quiet.Add(1) }
	t.Cleanup(func() { testHookQuiet = nil })

	// fetched asks one key twice in a row, and reports the answers and
	// whether the second call skipped its probe.
	ask := func(key string) (first, second bool, skipped bool) {
		t.Helper()
		var err error
		if first, err = ix.Fetched(ctx, key); err != nil {
			t.Fatal(err)
		}
		before := quiet.Load()
		if second, err = ix.Fetched(ctx, key); err != nil {
			t.Fatal(err)
		}
		return first, second, quiet.Load() > before
	}
	if a, b, skipped := ask("new-a"); a || b || !skipped {
		t.Fatalf("a never-stored key, nothing committed: answers %v %v, second call without a probe %v; want false false true", a, b, skipped)
	}

	app := rawDB(t, path)
	steps := []struct {
		name  string
		key   string
		write func()
	}{
		{"the app's INSERT on its connection", "new-b", func() { insertIDs(t, app, "new-b") }},
		{"another process's INSERT", "child-0000000", func() { insertIn(t, path, "", "records", "child", 1) }},
		{"a 12-step migration adding a row", "new-c", func() {
			execIn(t, path, "",
				`CREATE TABLE records_new (id TEXT PRIMARY KEY, body TEXT, extra INTEGER)`,
				`INSERT INTO records_new (id, body) SELECT id, body FROM records`,
				`INSERT INTO records_new (id, body) VALUES ('new-c', 'x')`,
				`DROP TABLE records`,
				`ALTER TABLE records_new RENAME TO records`)
		}},
	}
	for _, st := range steps {
		// The key is asked first while it is absent: its "absent" is
		// vouched for, then quiet.
		if a, b, skipped := ask(st.key); a || b || !skipped {
			t.Fatalf("%s: before it, %q answered %v %v (quiet %v); want false false true", st.name, st.key, a, b, skipped)
		}
		st.write()
		before := quiet.Load()
		got, err := ix.Fetched(ctx, st.key)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if !got {
			t.Fatalf("%s: Fetched(%q) = false right after it was stored", st.name, st.key)
		}
		if quiet.Load() != before {
			t.Fatalf("%s: the call after the commit skipped its probe", st.name)
		}
		missing, err := ix.Missing(ctx, []string{st.key, "never-" + st.key})
		if err != nil {
			t.Fatal(err)
		}
		if len(missing) != 1 || missing[0] != "never-"+st.key {
			t.Fatalf("%s: Missing = %q, want only the never-stored key", st.name, missing)
		}
	}
}
