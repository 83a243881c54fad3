package rebuild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/normalize"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"golang.org/x/text/unicode/norm"
)

// nulSpellings returns ids, tagged by tag, stored in a spelling that is
// not NFC ("a" + COMBINING TILDE for "ã", "e" + COMBINING ACUTE for "é"),
// each with a NUL before its first character outside ASCII, and beside
// the NUL every other control character (0x01-0x1f and 0x7f), alone or
// with the NUL: SQL that stops at a NUL (GLOB, C string functions) never
// sees their accent.
func nulSpellings(tag string) []string {
	out := []string{
		"nul\x00x/Sa\u0303o-" + tag,
		"\x00Sa\u0303o-" + tag,
		"\x00e\u0301-" + tag,
		"nul\x00\x00x/Sa\u0303o-" + tag,
		"nul\x00x/Sa\u0303o\x00-" + tag,
	}
	for _, c := range append(rangeBytes(0x01, 0x1f), 0x7f) {
		out = append(out,
			fmt.Sprintf("nul\x00%c/Sa\u0303o-%02x-%s", c, c, tag),
			fmt.Sprintf("ctl%c/Sa\u0303o-%02x-%s", c, c, tag))
	}
	return out
}

// surrogateLike returns ids, tagged by tag, that are not UTF-8 (the
// encoding of a lone UTF-16 surrogate, stored as TEXT by the app): no
// key can name them, and they must not disturb the answers about others.
func surrogateLike(tag string) []string {
	return []string{"\xed\xa0\x80", "\xed\xbf\xbf-" + tag, "sur\x00\xed\xa0\x80/Sa\u0303o-" + tag, "sur\xed\xb0\x80\x01Sa\u0303o-" + tag}
}

func rangeBytes(from, to byte) []byte {
	var out []byte
	for c := from; c <= to; c++ {
		out = append(out, c)
	}
	return out
}

// spellingPage asks about ids: each in the spelling stored and in NFC,
// look-alikes (a suffix added, the first NUL left out: the reference
// says whether the table holds them), the first id
// again, and a key that is not UTF-8.
func spellingPage(stored []string) []string {
	var page []string
	for _, id := range stored {
		page = append(page, id, norm.NFC.String(id), norm.NFC.String(id)+"-never")
		if i := strings.IndexByte(id, 0); i >= 0 {
			page = append(page, norm.NFC.String(id[:i]+id[i+1:]))
		}
	}
	return append(page, stored[0], norm.NFC.String(stored[0]), "\xed\xa0\x80")
}

// TestControlCharactersBeforeTheAccent: ids the app stored in a spelling
// that is not NFC, with a NUL and other control characters before their
// first character outside ASCII (and, beside them, ids that are not
// UTF-8), are answered fetched, asked in the stored spelling and in NFC,
// over every path that finds stored spellings: a read-only index on a
// table never attached (the table's keys scanned by SQLite), a bypass
// while a rebuild runs (the probe reads the log's entries that may be
// stored spellings), the rebuild's scan, a serving index that catches
// up on rows inserted after it opened (by its follower or by the call),
// a filter left behind the log (the probe's and the catch-up's reads of
// those entries), and after a reopen (the spellings table the saves
// wrote). TestControlCharactersAfterKill adds a writer killed outright.
func TestControlCharactersBeforeTheAccent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 200)
	before := nulSpellings("before")
	fill := func(path string) { insertIDs(t, rawDB(t, path), surrogateLike("x")...) }

	t.Run("read-only, never attached", func(t *testing.T) {
		path := appDB(t, slices.Concat(seed, before)...)
		fill(path)
		ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver(), ReadOnly: true}, Source: Source{Table: "records", Column: "id"}})
		if st := stats(ix); st.Attached || st.Serving {
			t.Fatalf("attached %v, serving %v: want SQLite alone", st.Attached, st.Serving)
		}
		judgePage(t, ix, storedCanon(t, path, "records"), spellingPage(before), true, "read-only")
		after := nulSpellings("after")
		insertIDs(t, rawDB(t, path), after...)
		judgePage(t, ix, storedCanon(t, path, "records"), spellingPage(slices.Concat(before, after)), true, "read-only, rows committed after open")
	})

	t.Run("bypass during a rebuild, its scan, reopen", func(t *testing.T) {
		path := appDB(t, slices.Concat(seed, before)...)
		fill(path)
		cfg, hk := hooked(appConfig(path))
		ix := open(t, cfg)
		judgePage(t, ix, storedCanon(t, path, "records"), spellingPage(before), true, "serving after the first scan")
		// The rebuild's scan reads every row in one chunk, then waits:
		// rows inserted meanwhile are in the log only.
		entered, release := scanGate(t, hk)
		done := make(chan error, 1)
		go func() { done <- ix.Rebuild(ctx) }()
		waitClosed(t, entered, "the rebuild's scan")
		if st := stats(ix); !st.Rebuilding || st.Serving {
			t.Fatalf("during the scan: rebuilding %v, serving %v", st.Rebuilding, st.Serving)
		}
		during := nulSpellings("during")
		insertIDs(t, rawDB(t, path), during...)
		all := slices.Concat(before, during)
		judgePage(t, ix, storedCanon(t, path, "records"), spellingPage(all), true, "bypass during a rebuild")
		release()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		hk.scanRow.Store(nil)
		judgePage(t, ix, storedCanon(t, path, "records"), spellingPage(all), true, "serving the rebuilt filter")
		if err := ix.Close(ctx); err != nil {
			t.Fatal(err)
		}
		again := open(t, appConfig(path))
		if st := stats(again); !st.Serving || st.SnapshotError != nil {
			t.Fatalf("reopen: serving %v, snapshot error %v", st.Serving, st.SnapshotError)
		}
		judgePage(t, again, storedCanon(t, path, "records"), spellingPage(all), true, "reopened from the snapshot")
	})

	for _, follow := range []bool{true, false} {
		t.Run(fmt.Sprintf("serving catch-up, follower %v", follow), func(t *testing.T) {
			path := appDB(t, slices.Concat(seed, before)...)
			fill(path)
			cfg := appConfig(path)
			cfg.knobs.noFollow = !follow
			ix := open(t, cfg)
			if _, err := ix.Fetched(ctx, "plain"); err != nil { // a call: the follower watches for commits
				t.Fatal(err)
			}
			caught := stats(ix).CaughtUp
			after := nulSpellings("after")
			insertIDs(t, rawDB(t, path), after...)
			if follow {
				// Between calls: the follower takes the rows in, or Wait
				// does (the same catch-up), before the next call.
				if err := ix.Wait(ctx); err != nil {
					t.Fatal(err)
				}
				if got := stats(ix).CaughtUp; got < caught+uint64(len(after)) {
					t.Fatalf("caught up %d entries between calls, want %d", got-caught, len(after))
				}
			}
			judgePage(t, ix, storedCanon(t, path, "records"), spellingPage(slices.Concat(before, after)), true, "serving, rows inserted after open")
		})
	}

	for _, chunk := range []int{8, 1024} { // the tail beyond the probe's chunk, or within it
		t.Run(fmt.Sprintf("filter behind the log, chunk %d", chunk), func(t *testing.T) {
			path := appDB(t, slices.Concat(seed, before)...)
			fill(path)
			cfg := appConfig(path)
			cfg.knobs = knobs{store: store.Knobs{LogChunk: chunk}, behind: true, noFollow: true}
			ix := open(t, cfg)
			gen := stats(ix).Generation
			after := nulSpellings("after")
			insertIDs(t, rawDB(t, path), slices.Concat(after, ids("plain-after", 20))...)
			judgePage(t, ix, storedCanon(t, path, "records"), spellingPage(slices.Concat(before, after)), true, "filter behind the log")
			if st := stats(ix); st.Generation != gen || !st.Serving {
				t.Fatalf("generation %d → %d, serving %v: the filter was to stay behind", gen, st.Generation, st.Serving)
			}
		})
	}
}

func init() {
	// spellings: path. Rebuilds once, inserting ids of nulSpellings
	// while the rebuild's scan waits (after reading every row) and asking
	// about them in bypass; then, once the rebuild has saved, prints
	// "saved" and goes on inserting such ids, asking about them and
	// saving, until it is killed.
	childActs["spellings"] = func(t *testing.T, args []string) {
		ctx := context.Background()
		path := args[0]
		cfg, hk := hooked(appConfig(path))
		ix := open(t, cfg)
		app := rawDB(t, path)
		entered, release := scanGate(t, hk)
		done := make(chan error, 1)
		go func() { done <- ix.Rebuild(ctx) }()
		<-entered
		during := nulSpellings("during")
		insertIDs(t, app, during...)
		if _, err := ix.Missing(ctx, spellingPage(during)); err == nil {
			t.Fatal("Missing of a page with a key that is not UTF-8: no error")
		}
		release()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		hk.scanRow.Store(nil)
		fmt.Println("saved")
		for r := 0; r < 10_000; r++ {
			round := nulSpellings(fmt.Sprintf("r%d", r))
			insertIDs(t, app, round...)
			if _, err := ix.Missing(ctx, spellingPage(round)); err == nil {
				t.Fatal("Missing of a page with a key that is not UTF-8: no error")
			}
			if err := ix.Save(ctx); err != nil {
				t.Fatal(err)
			}
			fmt.Printf("round %d\n", r)
		}
	}
}

// TestControlCharactersAfterKill: a process inserts ids of nulSpellings
// while its rebuild scans, asks about them in bypass, saves, and goes on
// inserting and saving until it is killed outright (SIGKILL). Reopened,
// the index serves from what that process saved and answers every id the
// table holds, in its stored spelling and in NFC.
func TestControlCharactersAfterKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	seed := ids("seed", 200)
	before := nulSpellings("before")
	path := appDB(t, slices.Concat(seed, before)...)
	insertIDs(t, rawDB(t, path), surrogateLike("x")...)
	cmd, lines, stderr := streamChild(t, filepath.Dir(path), "spellings", path)
	waitLine(t, lines, "saved")
	waitLine(t, lines, "round 2")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if out := drain(lines) + stderr.String(); strings.Contains(out, "FAIL") {
		t.Fatalf("the child failed before it was killed:\n%s", out)
	}
	ix := open(t, appConfig(path))
	if st := stats(ix); !st.Serving {
		t.Fatalf("reopened after the kill: not serving (%v, %v)", st.SnapshotError, st.LastError)
	}
	// Every id of the table that has a NUL or a control character.
	var asked []string
	for id := range tableIDs(t, path, "records") {
		if c, ok := canonRef(id, MaxKeyBytes); ok && c != id {
			asked = append(asked, id)
		}
	}
	slices.Sort(asked)
	if len(asked) < 3*len(before) {
		t.Fatalf("the table holds %d ids stored in another spelling, want at least %d", len(asked), 3*len(before))
	}
	judgePage(t, ix, storedCanon(t, path, "records"), spellingPage(asked), false, "reopened after the kill")
	// And by a read-only index, which reads the spellings table the
	// killed process left and the log after it.
	ro := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver(), ReadOnly: true}, Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb"}})
	judgePage(t, ro, storedCanon(t, path, "records"), spellingPage(asked), false, "read-only after the kill")
}

// TestPlainKeysNeedNoSpellingScan: while a source's triggers are being
// put back after the app's 12-step migration, a page of ids that cannot
// be stored in another spelling (ASCII without K, ; or `: UUIDs) is
// answered from SQLite without scanning the table for stored spellings;
// so is a page holding names, which asks every spelling of each name
// (walked from the name alone), and is exact. Only a key with more
// spellings than a call walks (eleven K) takes the read, and is exact.
func TestPlainKeysNeedNoSpellingScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plain := make([]string, 100)
	for i := range plain {
		plain[i] = fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
	}
	// Eleven K, one of them a KELVIN SIGN: 2,048 spellings, more than a
	// call walks.
	path := appDB(t, append(slices.Clone(plain), "cafe\u0301", "KKK\u212aKKKKKKK")...)
	scans := 0
	ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver(),
		knobs: knobs{noFollow: true, spellingScan: func() { scans++ }}},
		Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb", NoAutoRebuild: true}})
	app := rawDB(t, path)
	// SQLite's 12-step table change: the library's triggers go with the
	// old table; nothing puts them back (AutoRebuild.Off).
	for _, q := range []string{
		`CREATE TABLE records_new (id TEXT PRIMARY KEY, body TEXT, extra INTEGER)`,
		`INSERT INTO records_new (id, body) SELECT id, body FROM records`,
		`DROP TABLE records`,
		`ALTER TABLE records_new RENAME TO records`,
	} {
		mustExec(t, app, q)
	}
	page := append(slices.Clone(plain[:50]), "00000000-dead-4000-8000-000000000000")
	got, err := ix.Missing(ctx, page)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range page {
		if got[i] != (i == 50) {
			t.Fatalf("Missing(%q) = %v, want %v", k, got[i], i == 50)
		}
	}
	if scans != 0 {
		t.Fatalf("a page of plain ids scanned the table for stored spellings %d times", scans)
	}
	if st := stats(ix); st.Serving {
		t.Fatal("the filter still serves a table whose triggers are gone")
	}
	got, err = ix.Missing(ctx, []string{"caf\u00e9", plain[0], "caf\u00e9-not"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []bool{false, false, true}) {
		t.Fatalf("Missing(café in NFC, a stored id, a new name) = %v, want [false false true]", got)
	}
	if scans != 0 {
		t.Fatalf("names were answered by %d reads of the table, want their spellings walked", scans)
	}
	got, err = ix.Missing(ctx, []string{"KKKKKKKKKKK", "caf\u00e9", "KKKKKKKKKKKK"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []bool{false, false, true}) {
		t.Fatalf("Missing(eleven K, café, twelve K) = %v, want [false false true]", got)
	}
	if scans != 1 {
		t.Fatalf("keys of more spellings than a call walks: %d reads of the table, want 1", scans)
	}
}

// TestReadOnlySeesSpellingsCommittedAfterOpen: a read-only index, on a
// source attached by a writable open (with and without its snapshot) and
// on a source never attached, finds an id that another connection
// committed in NFD after the index opened under both spellings, by
// Fetched and by Missing, and an id stored with a KELVIN SIGN (U+212A) by
// "K".
func TestReadOnlySeesSpellingsCommittedAfterOpen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		attached bool
		snapshot bool
	}{
		{"attached, snapshot", true, true},
		{"attached, no snapshot", true, false},
		{"never attached", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := modeDB(t, "wal", []string{"records"}, ids("seed", 300)...)
			ix := readOnlyIndex(t, path, tc.attached, tc.snapshot)
			app := modeConn(t, path, "wal")
			for round := range 3 { // several commits, each seen by the next calls
				nfc := fmt.Sprintf("Ångström-%d", round)
				nfd := norm.NFD.String(nfc)
				kelvin := fmt.Sprintf("\u212A-after-%d", round)
				never := fmt.Sprintf("Ångström-never-%d", round)
				expect(t, ix, map[string]bool{}, []string{nfc, nfd, "K-after-" + fmt.Sprint(round), kelvin, never})
				insertInto(t, app, "records", nfd, kelvin)
				fetched := set([]string{nfc, nfd, "K-after-" + fmt.Sprint(round), kelvin, "seed-0000001"})
				expect(t, ix, fetched, []string{nfc, nfd, "K-after-" + fmt.Sprint(round), kelvin, norm.NFD.String(never), "seed-0000001"})
			}
		})
	}
}

func TestCanonicalSpellingsFoundBothWays(t *testing.T) {
	t.Parallel()
	nfd := []string{"cafe\u0301-1", "\u1112\u1161\u11ab-2", "\u304b\u3099-3", "A\u030a-4"}
	nfc := []string{"caf\u00e9-1", "\ud55c-2", "\u304c-3", "\u00c5-4"}
	path := appDB(t, nfd[0], nfd[1]) // stored NFD before attaching
	other := rawDB(t, path)
	mustExec(t, other, `INSERT INTO records (id) VALUES (?)`, nfc[2]) // stored NFC
	ix := open(t, appConfig(path))
	mustExec(t, other, `INSERT INTO records (id) VALUES (?)`, nfd[3]) // stored NFD after attaching
	fetched := set(nfd, nfc)
	probe := append(slices.Clone(nfd), nfc...)
	probe = append(probe, "cafe\u0301-9", "caf\u00e9-9")
	expect(t, ix, fetched, probe)
	// Two spellings of one new id in a page, and one id twice: every
	// position answered on its own.
	page := []string{"caf\u00e9-9", nfd[0], "cafe\u0301-9", "new", "new", nfc[0]}
	if missing, err := ix.Missing(context.Background(), page); err != nil ||
		fmt.Sprint(missing) != fmt.Sprint([]bool{true, false, true, true, true, false}) {
		t.Fatalf("Missing(%+q) = %v, %v", page, missing, err)
	}
	// The same after a rebuild, and in bypass while none serves.
	if err := ix.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	expect(t, ix, fetched, probe)
	ix.k.G.Rebuilding() // bypass, as while a rebuild runs
	expect(t, ix, fetched, probe)
	// The table itself was never rewritten.
	var n int
	if err := other.QueryRow(`SELECT count(*) FROM records WHERE id IN (?, ?, ?)`, nfd[0], nfd[1], nfd[3]).Scan(&n); err != nil || n != 3 {
		t.Fatalf("stored NFD rows: %d, %v", n, err)
	}
}

// TestSuspendedCallsSeeNewSpellings: on a table never attached (no log),
// calls made while the database is suspended, each on a data-version
// connection of its own, see the spellings committed between them: a
// count of changes read on one connection is never taken for the same
// count read on another.
func TestSuspendedCallsSeeNewSpellings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 10)...)
	app := rawDB(t, path)
	ix := open(t, config{DBConfig: DBConfig{Path: path, ReadOnly: true, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id"}})
	db := ix.db
	if err := db.Suspend(ctx); err != nil {
		t.Fatal(err)
	}
	defer db.Resume()
	for i := range 5 {
		nfc := fmt.Sprintf("caf\u00e9-%d", i)
		if got, err := ix.Missing(ctx, []string{nfc}); err != nil || !got[0] {
			t.Fatalf("before it was stored: Missing(%q) = %v, %v", nfc, got, err)
		}
		insertIDs(t, app, norm.NFD.String(nfc))
		if got, err := ix.Missing(ctx, []string{nfc}); err != nil || got[0] {
			t.Fatalf("stored in NFD: Missing(%q) = %v, %v; want fetched", nfc, got, err)
		}
	}
}

// TestWalkedSpellingsAfterTableRebuild: after the app's 12-step table
// change (the library's triggers gone, nothing puts them back), ids the
// app then stores in every kind of other spelling, which no log records,
// are found by their NFC key, in a page and one by one, without a read
// of the table: a decomposed letter, marks in the other canonical order,
// a deprecated mark that decomposes to another (U+0341), KELVIN and
// ANGSTROM SIGN, conjoining jamo for a Hangul syllable, a CJK
// compatibility ideograph. Their neighbours (one mark fewer, another
// letter) stay missing. The same with walking off: read from the table.
func TestWalkedSpellingsAfterTableRebuild(t *testing.T) {
	t.Parallel()
	for _, walk := range []bool{true, false} {
		t.Run(fmt.Sprintf("walk=%v", walk), func(t *testing.T) { walkedAfterTableRebuild(t, walk) })
	}
}

func walkedAfterTableRebuild(t *testing.T, walk bool) {
	t.Parallel()
	path := appDB(t, "seed-1", "Jose\u0301")
	scans, walks := 0, 0
	ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver(),
		knobs: knobs{noFollow: true, noWalk: !walk, spellingScan: func() { scans++ }, walk: func() { walks++ }}},
		Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb", NoAutoRebuild: true}})
	expect(t, ix, set([]string{"seed-1", "Jos\u00e9"}), []string{"seed-1", "Jos\u00e9", "Jose"})
	app := rawDB(t, path)
	for _, q := range []string{
		`CREATE TABLE records_new (id TEXT PRIMARY KEY, body TEXT)`,
		`INSERT INTO records_new SELECT id, body FROM records`,
		`DROP TABLE records`,
		`ALTER TABLE records_new RENAME TO records`,
	} {
		mustExec(t, app, q)
	}
	stored := map[string]string{ // NFC key → the spelling the app stores
		"Zo\u00eb":         "Zoe\u0308",
		"Nguy\u1ec7n":      "Nguye\u0302\u0323n", // marks out of canonical order
		"Andr\u00e9":       "Andre\u0341",
		"Kelvin-1":         "\u212aelvin-1",
		"\u00c5sa":         "\u212bsa",
		"\uac01-2":         "\u1100\u1161\u11a8-2",
		"\u8c48-3":         "\uf900-3",
		"Dvo\u0159\u00e1k": "Dvor\u030c\u00e1k",
	}
	var want []string
	for k, s := range stored {
		mustExec(t, app, `INSERT INTO records (id) VALUES (?)`, s)
		want = append(want, k)
	}
	probe := append(slices.Clone(want), "seed-1", "Jos\u00e9", "Zoe", "Nguy\u00ean", "Kelvin-2", "\u00c5s", "\uac00-2", "Dvo\u0159ak")
	slices.Sort(probe)
	expect(t, ix, set(want, []string{"seed-1", "Jos\u00e9"}), probe)
	if walk != (scans == 0) || walk != (walks > 0) {
		t.Fatalf("walk %v: %d reads of the table's stored spellings, %d walks", walk, scans, walks)
	}
	if st := stats(ix); st.Serving {
		t.Fatal("the filter still serves a table whose triggers are gone")
	}
}

// TestNoWalkWhileTheSpellingsTableIsComplete: a page holding names
// answered from SQLite while the filter is rebuilt (here its snapshot
// was removed) asks through the spellings table the last scan completed:
// it lists no name's every spelling (a walk costs the process's first
// page of names about 1–2 ms), asks through the table in its one probe,
// and its answers are exact; with the app's pool handed over too.
func TestNoWalkWhileTheSpellingsTableIsComplete(t *testing.T) {
	t.Parallel()
	for _, pool := range []bool{false, true} {
		t.Run(fmt.Sprintf("apppool=%v", pool), func(t *testing.T) { noWalkWhileComplete(t, pool) })
	}
}

// noWalkWhileComplete is the test, with the app's pool handed over
// (DBConfig.DB: the probe runs there) or not.
func noWalkWhileComplete(t *testing.T, pool bool) {
	path := appDB(t, "seed-1", "Jose\u0301", "Zoe\u0308", "\u212bsa")
	cfg := appConfig(path)
	cfg.knobs.noFollow = true
	if pool {
		cfg.DB, cfg.Driver = modeConn(t, path, ""), nil
	}
	first := open(t, cfg)
	waitServing(t, first)
	if err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(cfg.Source.Snapshot); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	var walks, probes atomic.Int64
	cfg.knobs.scanRow = func(int64) error { <-release; return nil } // the rebuild waits for the page
	cfg.knobs.walk = func() { walks.Add(1) }
	cfg.knobs.afterProbe = func() { probes.Add(1) }
	ix, err := Open(context.Background(), cfg.DBConfig, cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { free(); _ = ix.Close(context.Background()) })
	page := []string{"Jos\u00e9", "Zo\u00eb", "\u00c5sa", "\u00c9mile", "seed-1", "Zoe"}
	got, err := missingList(context.Background(), ix, page)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"\u00c9mile", "Zoe"}; !slices.Equal(got, want) {
		t.Errorf("Missing = %q, want %q", got, want)
	}
	if st := stats(ix); st.BypassLookups == 0 || st.Serving {
		t.Fatalf("the page was not answered from SQLite (serving %v, %d bypassed): the test shows nothing", st.Serving, st.BypassLookups)
	}
	if n := walks.Load(); n != 0 {
		t.Errorf("%d walks with the spellings table complete", n)
	}
	if n := probes.Load(); n != 1 {
		t.Errorf("%d probes for one page: the first asked without the spellings table the view was built from", n)
	}
	free()
}

// TestWalkedAndReadSpellingsInTurn: on a source never attached (read
// only, no log), calls that walk and calls that must read (a key of more
// spellings than a call walks) take turns with commits of ids in other
// spellings between them; every answer is exact, and a read serves only
// until the next commit.
func TestWalkedAndReadSpellingsInTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const manyK = "KKKKKKKKKKK" // 2,048 spellings
	path := appDB(t, "cafe\u0301", "KKKKK\u212aKKKKK")
	scans := 0
	ix := open(t, config{DBConfig: DBConfig{Path: path, ReadOnly: true, Driver: testdriver.Driver(),
		knobs: knobs{noFollow: true, spellingScan: func() { scans++ }}},
		Source: Source{Table: "records", Column: "id"}})
	app := rawDB(t, path)
	stored := []string{"caf\u00e9", manyK}
	for i, step := range []struct {
		insert string // stored before the page, in another spelling
		page   []string
		scans  int // reads so far
	}{
		{"", []string{"caf\u00e9", "cafe"}, 0},
		{"", []string{manyK, "caf\u00e9"}, 1},
		{"", []string{manyK + "K", "na\u00efve"}, 1}, // the read serves: nothing committed
		{"nai\u0308ve", []string{"na\u00efve", "caf\u00e9"}, 1},
		{"\u212a\u00f6ln", []string{manyK, "K\u00f6ln", "na\u00efve"}, 2},
		{"Zoe\u0308", []string{"Zo\u00eb", "K\u00f6ln", "Zoe"}, 2},
	} {
		if step.insert != "" {
			mustExec(t, app, `INSERT INTO records (id) VALUES (?)`, step.insert)
			c, err := normalize.String(step.insert)
			if err != nil {
				t.Fatal(err)
			}
			stored = append(stored, c)
		}
		got, err := ix.Missing(ctx, step.page)
		if err != nil {
			t.Fatal(err)
		}
		for j, k := range step.page {
			if got[j] == slices.Contains(stored, k) {
				t.Fatalf("step %d: Missing(%+q) = %v, stored %+q", i, k, got[j], stored)
			}
		}
		if scans != step.scans {
			t.Fatalf("step %d: %d reads of the table, want %d", i, scans, step.scans)
		}
	}
}

// TestWalkLimits: keys past the walk's limits are answered exactly from
// a read of the table: a page whose names have more other spellings
// together than a call walks (1,100 names of two accented letters, 8
// each), and a key longer than normalize.MaxWalkBytes stored in NFD.
func TestWalkLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := func(i int) string { return fmt.Sprintf("Jos\u00e9-\u00e9-%04d", i) }
	long := strings.Repeat("\u00e9", normalize.MaxWalkBytes/2+1)
	var stored []string
	for i := 0; i < 1100; i += 3 {
		stored = append(stored, norm.NFD.String(name(i)))
	}
	path := appDB(t, stored...)
	scans := 0
	ix := open(t, config{DBConfig: DBConfig{Path: path, ReadOnly: true, Driver: testdriver.Driver(),
		knobs: knobs{noFollow: true, spellingScan: func() { scans++ }}},
		Source: Source{Table: "records", Column: "id"}})
	page := make([]string, 1100)
	for i := range page {
		page[i] = name(i)
	}
	got, err := ix.Missing(ctx, page)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range page {
		if got[i] != (i%3 != 0) {
			t.Fatalf("Missing(%+q) = %v", k, got[i])
		}
	}
	if scans != 1 {
		t.Fatalf("a page over the walk's budget: %d reads of the table, want 1", scans)
	}
	mustExec(t, rawDB(t, path), `INSERT INTO records (id) VALUES (?)`, norm.NFD.String(long))
	got, err = ix.Missing(ctx, []string{long, long + "x", "caf\u00e9"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []bool{false, true, true}) {
		t.Fatalf("Missing(a long key stored in NFD, one longer, café) = %v, want [false true true]", got)
	}
	if scans != 2 {
		t.Fatalf("a key over MaxWalkBytes after a commit: %d reads of the table, want 2", scans)
	}
}
