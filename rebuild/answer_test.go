package rebuild

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// TestEveryCommitIsSeenByTheNextCall: a call whose keys the filter
// rules out still checks, in its probe, what was committed since the
// filter's mark: every kind of commit is seen by the very next call, in
// WAL and in a rollback-journal mode: the app's rows on its own
// connection, another process's rows, a migration that rebuilds the
// table, the library's own writer (Save), another filter (Reload).
func TestEveryCommitIsSeenByTheNextCall(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"WAL", "DELETE"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			path := modeDB(t, mode, []string{"records"}, ids("old", 1000)...)
			app := modeConn(t, path, mode)
			cfg := appConfig(path)
			cfg.knobs.noFollow = true // the calls themselves, not the follower, see each commit
			ix := open(t, cfg)
			waitServing(t, ix)
			steps := []struct {
				name   string
				key    string // stored by the step ("": none)
				change func()
			}{
				{"the app's INSERT on its connection", "new-b", func() { insertInto(t, app, "records", "new-b") }},
				{"another process's INSERT", "child-0000000", func() { insertIn(t, path, mode, "records", "child", 1) }},
				{"a 12-step migration adding a row", "new-c", func() {
					execIn(t, path, mode,
						`BEGIN`,
						`CREATE TABLE records_new (id TEXT PRIMARY KEY, body TEXT, extra INTEGER)`,
						`INSERT INTO records_new (id, body) SELECT id, body FROM records`,
						`INSERT INTO records_new (id, body) VALUES ('new-c', 'x')`,
						`DROP TABLE records`,
						`ALTER TABLE records_new RENAME TO records`,
						`COMMIT`)
					waitServing(t, ix) // re-attached and rebuilt: a new filter
				}},
				{"the library's own commit (Save)", "", func() {
					if err := ix.Save(ctx); err != nil {
						t.Fatal(err)
					}
				}},
				{"another filter (Reload)", "", func() {
					if err := ix.k.Reload(ctx); err != nil {
						t.Fatal(err)
					}
				}},
			}
			for i, st := range steps {
				probe := st.key
				if probe == "" {
					probe = fmt.Sprintf("never-%d", i)
				}
				for range 2 { // asked while absent, twice: the filter rules it out
					if got, err := ix.Fetched(ctx, probe); err != nil || got {
						t.Fatalf("%s: before it, Fetched(%q) = %v, %v", st.name, probe, got, err)
					}
				}
				st.change()
				got, err := ix.Fetched(ctx, probe)
				if err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				if got != (st.key != "") {
					t.Fatalf("%s: Fetched(%q) = %v right after it", st.name, probe, got)
				}
				missing, err := missingList(ctx, ix, []string{probe, "never-" + probe})
				if err != nil {
					t.Fatal(err)
				}
				want := 1 + map[bool]int{true: 0, false: 1}[st.key != ""]
				if len(missing) != want || missing[len(missing)-1] != "never-"+probe {
					t.Fatalf("%s: Missing = %q", st.name, missing)
				}
			}
		})
	}
}

// TestCollectionsShareAReader: two collections of one database asked in
// turn on the same reading connection (one reader): a row committed to
// one is seen by the next call of each.
func TestCollectionsShareAReader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := collectionsDB(t, 2, 100)
	db, err := OpenDB(ctx, DBConfig{Path: path, Readers: 1, Driver: testdriver.Driver(), knobs: knobs{noFollow: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close(ctx) })
	var ixs []*Index
	for i := range 2 {
		ix, err := db.Index(ctx, Source{Table: fmt.Sprintf("coll%d", i), Column: "id"})
		if err != nil {
			t.Fatal(err)
		}
		waitServing(t, ix)
		ixs = append(ixs, ix)
	}
	for round := range 3 {
		for i, ix := range ixs {
			got, err := ix.Missing(ctx, []string{fmt.Sprintf("new-%d-%d", i, round)})
			if err != nil || !got[0] {
				t.Fatalf("collection %d: %v, %v", i, got, err)
			}
		}
	}
	app := rawDB(t, path)
	insertInto(t, app, "coll0", "new-0-9")
	for i, ix := range ixs {
		got, err := ix.Fetched(ctx, fmt.Sprintf("new-%d-9", i))
		if err != nil || got != (i == 0) {
			t.Fatalf("collection %d after the commit: %v, %v", i, got, err)
		}
	}
}

// TestAnswersUnderWriters: six goroutines share one reading connection
// and ask about the ids the app committed just before each call, while
// the app commits without pause; every answer is judged (an id committed
// before the call began is fetched, one never written is missing).
func TestAnswersUnderWriters(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"WAL", "DELETE"} {
		// Subtests not parallel: the DELETE one is among the longest, and a
		// parallel subtest waits behind every test already waiting (it would
		// run last, alone).
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			path := modeDB(t, mode, []string{"records"}, ids("seed", 1000)...)
			app := modeConn(t, path, mode)
			cfg := appConfig(path)
			cfg.Readers = 1
			// A writer that commits without pause can keep a reader out
			// for seconds in a rollback-journal mode (SQLite's locks are
			// not fair): a busy timeout longer than the default.
			cfg.BusyTimeout = busy
			ix := open(t, cfg)
			waitServing(t, ix)

			// The app commits until every asker made its calls (at most
			// total rows).
			const total, perAsker = 20000, 300
			key := func(i int) string { return fmt.Sprintf("w-%06d", i) }
			var committed atomic.Int64 // key(0) ... key(committed-1) are stored
			done, stop := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				for i := 0; i < total; {
					select {
					case <-stop:
						return
					default:
					}
					n := min(1+i%7, total-i)
					var ks []string
					for j := i; j < i+n; j++ {
						ks = append(ks, key(j))
					}
					if err := tryInsert(app, "records", ks...); err != nil {
						t.Error(err)
						return
					}
					i += n
					committed.Store(int64(i))
				}
			}()
			var calls, wrong atomic.Int64
			var wg sync.WaitGroup
			for g := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := 0; n < perAsker; n++ {
						select {
						case <-done:
							return
						default:
						}
						c := int(committed.Load())
						var page []string
						stored := map[string]bool{}
						for j := 0; j < 4 && c-1-3*j-g >= 0; j++ {
							page = append(page, key(c-1-3*j-g))
							stored[key(c-1-3*j-g)] = true
						}
						page = append(page, fmt.Sprintf("never-%d-%d", g, n))
						calls.Add(1)
						if n%2 == 0 {
							missing, err := missingList(ctx, ix, page)
							if err != nil {
								t.Error(err)
								return
							}
							for _, k := range missing {
								if stored[k] {
									wrong.Add(1)
									t.Errorf("Missing lists %s, committed before the call", k)
								}
							}
							if len(missing) != len(page)-len(stored) {
								wrong.Add(1)
								t.Errorf("Missing = %q for %q", missing, page)
							}
							continue
						}
						k := page[n%len(page)]
						got, err := ix.Fetched(ctx, k)
						if err != nil {
							t.Error(err)
							return
						}
						if got != stored[k] {
							wrong.Add(1)
							t.Errorf("Fetched(%s) = %v, committed before the call: %v", k, got, stored[k])
						}
					}
				}()
			}
			wg.Wait()
			close(stop)
			<-done
			t.Logf("%d calls, %d wrong", calls.Load(), wrong.Load())
		})
	}
}

// TestBehindCallAnswersWhatTheFilterRuledOut: a call that finds the
// filter behind the log and leaves it there (confirming costs less than
// taking the tail in) answers exactly: the ids committed in the tail,
// which the filter rules out, are confirmed in SQLite (in one more
// statement after the probe), and so are ids the app stored in another
// spelling, whose spellings only the tail records, asked in NFC. The
// log's tail is read inside the probe when it is short (the entries that
// may be stored spellings only) and by a catch-up when it is not.
func TestBehindCallAnswersWhatTheFilterRuledOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, chunk := range []int{64, 8} { // the tail fits the probe's chunk, or not
		t.Run(fmt.Sprintf("chunk %d", chunk), func(t *testing.T) {
			t.Parallel()
			old := ids("old", 200)
			path := appDB(t, old...)
			ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver(),
				knobs: knobs{store: store.Knobs{LogChunk: chunk}, behind: true, noFollow: true}},
				Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb"}})
			if !stats(ix).Serving {
				t.Fatal("no filter serving after Wait")
			}
			// The tail: names stored in NFD and with a KELVIN SIGN, then
			// ASCII ids; the filter ruled all of them out before.
			var tailStored, tailAsked []string
			for i := range 3 {
				tailStored = append(tailStored, fmt.Sprintf("cafe\u0301-%d", i), fmt.Sprintf("\u212a-%d", i))
				tailAsked = append(tailAsked, fmt.Sprintf("caf\u00e9-%d", i), fmt.Sprintf("K-%d", i))
			}
			newIDs := ids("new", 30)
			page := slices.Concat(old[:20], tailAsked, newIDs[:15], ids("never", 20))
			before, err := ix.Missing(ctx, page)
			if err != nil {
				t.Fatal(err)
			}
			for i, k := range page {
				if want := i >= 20; before[i] != want {
					t.Fatalf("before the tail: Missing(%q) = %v, want %v", k, before[i], want)
				}
			}
			insertIDs(t, rawDB(t, path), slices.Concat(tailStored, newIDs)...)
			fetched := set(old, tailAsked, newIDs)
			st0 := stats(ix)
			for round := range 2 { // the second call is as far behind as the first
				got, err := ix.Missing(ctx, page)
				if err != nil {
					t.Fatal(err)
				}
				for i, k := range page {
					if got[i] != !fetched[k] {
						t.Fatalf("round %d: Missing(%q) = %v, want %v", round, k, got[i], !fetched[k])
					}
				}
			}
			st := stats(ix)
			if st.Generation != st0.Generation {
				t.Fatalf("the filter took the tail in (generation %d → %d): the calls were to stay behind", st0.Generation, st.Generation)
			}
			if st.BypassLookups == st0.BypassLookups {
				t.Fatal("no key answered from SQLite alone: the filter was not behind")
			}
			if sum := st.LookupsAvoided + st.ConfirmedPositives + st.FalsePositives + st.BypassLookups + st.InvalidKeys; sum != st.Queries {
				t.Fatalf("the counters sum to %d, Queries is %d", sum, st.Queries)
			}
			// Fetched, one key at a time, the same way.
			for _, k := range page {
				got, err := ix.Fetched(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				if got != fetched[k] {
					t.Fatalf("Fetched(%q) = %v, want %v", k, got, fetched[k])
				}
			}
			// A page the filter rules out whole, behind a tail of names
			// in NFD: the probe reads those entries for the spellings
			// only, and the filter takes none of them in.
			var nfd, nfc []string
			for i := range 40 {
				nfd, nfc = append(nfd, fmt.Sprintf("nai\u0308ve-%d", i)), append(nfc, fmt.Sprintf("na\u00efve-%d", i))
			}
			insertIDs(t, rawDB(t, path), nfd...)
			gen := stats(ix).Generation
			page = slices.Concat(nfc, ids("never", 20))
			got, err := ix.Missing(ctx, page)
			if err != nil {
				t.Fatal(err)
			}
			for i, k := range page {
				if want := i >= len(nfc); got[i] != want {
					t.Fatalf("Missing(%q) = %v, want %v", k, got[i], want)
				}
			}
			if now := stats(ix).Generation; now != gen {
				t.Fatalf("the filter took the tail in (generation %d → %d): the call was to stay behind", gen, now)
			}
		})
	}
}

// TestMaybeIsNeverFetched: keys the filter holds but SQLite does not
// (deleted since) answer "maybe" in the filter and "not fetched" at the
// gate, counted as false positives.
func TestMaybeIsNeverFetched(t *testing.T) {
	t.Parallel()
	path := appDB(t, ids("kept", 100)...)
	ix := open(t, appConfig(path))
	ctx := context.Background()
	uncommitted := ids("ghost", 300)
	db := rawDB(t, path)
	insertIDs(t, db, uncommitted...)
	if _, err := missingList(ctx, ix, uncommitted[:1]); err != nil { // the filter catches up on them
		t.Fatal(err)
	}
	mustExec(t, db, `DELETE FROM records WHERE id LIKE 'ghost-%'`)
	mustExec(t, db, `DELETE FROM records WHERE id < 'kept-0000010'`) // ten records deleted
	if _, err := missingList(ctx, ix, []string{"x"}); err != nil {
		t.Fatal(err)
	}
	s := serving(ix)
	for _, k := range append(slices.Clone(uncommitted), ids("kept", 10)...) {
		if maybe, _ := s.F.MightContain(k); !maybe {
			t.Fatalf("filter lost %q", k)
		}
	}
	before := stats(ix).FalsePositives
	expect(t, ix, set(ids("kept", 100)[10:]), append(append(slices.Clone(uncommitted), ids("kept", 100)...), "never"))
	// Each of the 310 keys was asked by Missing (and by Fetched, which
	// looks a key of one spelling up without the filter).
	if got := stats(ix).FalsePositives - before; got < 310 {
		t.Fatalf("%d false positives counted, want at least %d", got, 310)
	}
}

// TestMissingOfALargePage: a page with more maybes than one confirmation
// statement carries (40,000 stored ids) is confirmed in several
// statements, and every stored id is answered fetched.
func TestMissingOfALargePage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stored := ids("old", 40000)
	path := appDB(t, stored...)
	page := append(slices.Clone(stored), ids("new", 100)...)
	ix := open(t, appConfig(path))
	waitServing(t, ix)
	missing, err := missingList(ctx, ix, page)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(missing, page[len(stored):]) {
		t.Fatalf("%d missing, want the 100 new ids", len(missing))
	}
}

// TestBehindCallFindsSpellingsInTheTable: a filter behind the log, whose
// index never needed the stored spellings yet, rules out names the app
// stored in NFD since, which another process's scan then recorded in the
// spellings table; the call stays behind (confirming costs less than
// taking the tail in), and asked in NFC, the names are confirmed through
// the spellings table, and found.
func TestBehindCallFindsSpellingsInTheTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old := ids("old", 200)
	path := appDB(t, old...)
	ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver(),
		knobs: knobs{behind: true, noFollow: true}},
		Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb"}})
	var nfd, nfc []string
	for i := range 30 {
		nfd, nfc = append(nfd, fmt.Sprintf("cafe\u0301-%d", i)), append(nfc, fmt.Sprintf("caf\u00e9-%d", i))
	}
	insertIDs(t, rawDB(t, path), nfd...)
	// Another process's rebuild records the new spellings in the table.
	other := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()},
		Source: Source{Table: "records", Column: "id", Snapshot: path + ".other.sfb"}})
	if err := other.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st0 := stats(ix)
	if !st0.Serving {
		t.Fatalf("no filter serving (last error %v)", st0.LastError)
	}
	page := slices.Concat(nfc, old[:10], ids("never", 10))
	got, err := ix.Missing(ctx, page)
	if err != nil {
		t.Fatal(err)
	}
	fetched := set(old, nfc)
	for i, k := range page {
		if got[i] != !fetched[k] {
			t.Fatalf("Missing(%q) = %v, want %v", k, got[i], !fetched[k])
		}
	}
	for _, k := range nfc[:5] {
		if ok, err := ix.Fetched(ctx, k); err != nil || !ok {
			t.Fatalf("Fetched(%q) = %v, %v; want true", k, ok, err)
		}
	}
	st := stats(ix)
	if st.Generation != st0.Generation || st.BypassLookups == st0.BypassLookups {
		t.Fatalf("the filter was not left behind (generation %d → %d, bypass lookups %d → %d): the path is not under test",
			st0.Generation, st.Generation, st0.BypassLookups, st.BypassLookups)
	}
	if d := describe(t, path); d.Spellings < 30 {
		t.Fatalf("the spellings table holds %d spellings: the path is not under test", d.Spellings)
	}
}
