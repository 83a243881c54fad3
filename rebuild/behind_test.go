package rebuild

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// TestBehindCallAnswersWhatTheFilterRuledOut: a call that finds the
// filter behind the log and leaves it there (confirming costs less than
// taking the tail in) answers exactly: the ids committed in the tail,
// which the filter rules out, are confirmed in SQLite (by the probe's own
// statement), and so are ids the app stored in another spelling, whose
// spellings only the tail records, asked in NFC. The log's tail is read
// inside the probe when it is short (the entries that may be stored
// spellings only) and by a catch-up when it is not.
func TestBehindCallAnswersWhatTheFilterRuledOut(t *testing.T) {
	ctx := context.Background()
	for _, chunk := range []int{64, 8} { // the tail fits the probe's chunk, or not
		t.Run(fmt.Sprintf("chunk %d", chunk), func(t *testing.T) {
			old := ids("old", 200)
			path := appDB(t, old...)
			ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver(),
				knobs: knobs{store: store.Knobs{LogChunk: chunk}, behind: true, noFollow: true}},
				Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb"}})
			if !ix.Stats().Serving {
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
			st0 := ix.Stats()
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
			st := ix.Stats()
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
		})
	}
}

// TestPlainKeysNeedNoSpellingScan: while a source's triggers are being
// put back after the app's 12-step migration, a page of ids that cannot
// be stored in another spelling (ASCII without K, ; or `: UUIDs) is
// answered from SQLite without scanning the table for stored spellings;
// a page holding a name waits for that scan, and is exact.
func TestPlainKeysNeedNoSpellingScan(t *testing.T) {
	ctx := context.Background()
	plain := make([]string, 100)
	for i := range plain {
		plain[i] = fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
	}
	path := appDB(t, append(slices.Clone(plain), "cafe\u0301")...)
	scans := 0
	ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver(),
		knobs: knobs{noFollow: true, spellingScan: func() { scans++ }}},
		Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb", AutoRebuild: AutoRebuild{Off: true}}})
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
	if st := ix.Stats(); st.Serving {
		t.Fatal("the filter still serves a table whose triggers are gone")
	}
	got, err = ix.Missing(ctx, []string{"caf\u00e9", plain[0], "caf\u00e9-not"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []bool{false, false, true}) {
		t.Fatalf("Missing(café in NFC, a stored id, a new name) = %v, want [false false true]", got)
	}
	if scans == 0 {
		t.Fatal("a name was answered without the table's stored spellings")
	}
}
