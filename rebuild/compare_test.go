package rebuild

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/syncfilter/syncfilter/snapshot"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// bytesIDs are ids a server that compares bytes holds as distinct
// records: NFC and NFD spellings of one name, both stored or one alone,
// KELVIN SIGN beside K, a NUL inside, plain ASCII.
func bytesIDs(tag string) (stored, unstored []string) {
	both := "Bo\u0308rk-" + tag // NFD; its NFC is stored too
	stored = []string{
		"$caf\u00e9:hs-" + tag,      // NFC alone
		"$cafe\u0301:hs2-" + tag,    // NFD alone
		both, norm.NFC.String(both), // two records
		"\u212a-kelvin-" + tag, // KELVIN SIGN; "K-kelvin" is another id
		"nul\x00e\u0301-" + tag,
		"plain-" + tag,
	}
	unstored = []string{
		"$cafe\u0301:hs-" + tag, "$caf\u00e9:hs2-" + tag, "K-kelvin-" + tag,
		"nul\x00\u00e9-" + tag, "plain-" + tag + "-never",
	}
	return stored, unstored
}

// bytesPage draws a page of n ids from stored and unstored, in every
// spelling (as given, NFC, NFD), with repeats and a key that is not
// UTF-8.
func bytesPage(r *rand.Rand, stored, unstored []string, n int) []string {
	page := make([]string, 0, n+1)
	for len(page) < n {
		var id string
		if r.IntN(2) == 0 {
			id = stored[r.IntN(len(stored))]
		} else {
			id = unstored[r.IntN(len(unstored))]
		}
		switch r.IntN(4) {
		case 1:
			id = norm.NFC.String(id)
		case 2:
			id = norm.NFD.String(id)
		}
		page = append(page, id)
		if r.IntN(8) == 0 {
			page = append(page, id) // a repeat
		}
	}
	return append(page, "\xed\xa0\x80")
}

// checkBytesPage asks Missing and Fetched about page and compares every
// position with the reference: missing unless the table holds those
// very bytes (a key that is not UTF-8: missing, and named invalid).
func checkBytesPage(t *testing.T, ctx context.Context, ix *Index, page []string, held map[string]bool, when string) {
	t.Helper()
	ans, err := ix.Missing(ctx, page)
	var bad *InvalidKeysError
	if err != nil && !errors.As(err, &bad) {
		t.Fatalf("%s: Missing: %v", when, err)
	}
	if len(ans) != len(page) {
		t.Fatalf("%s: %d answers for %d keys", when, len(ans), len(page))
	}
	for i, k := range page {
		if want := !held[k]; ans[i] != want {
			t.Errorf("%s: Missing(%+q) = %v, the table holding those bytes: %v", when, k, ans[i], held[k])
		}
		found, err := ix.Fetched(ctx, k)
		if one := (*InvalidKeysError)(nil); err != nil && !errors.As(err, &one) {
			t.Fatalf("%s: Fetched(%+q): %v", when, k, err)
		}
		if found != held[k] {
			t.Errorf("%s: Fetched(%+q) = %v, want %v", when, k, found, held[k])
		}
	}
	if bad == nil || positions(bad)[len(positions(bad))-1] != len(page)-1 {
		t.Errorf("%s: the key that is not UTF-8 is not named invalid: %v", when, err)
	}
}

// TestCompareBytes: a source that compares ids byte for byte answers
// every position of random pages (NFC and NFD spellings of stored and
// unstored ids, repeats, an invalid key) as the server's exact query
// would, on every path: a table never attached (SQLite alone), a
// serving filter, rows the filter catches up on, a reopen from its
// snapshot (whose policy is bytes/1), and the library's own table.
func TestCompareBytes(t *testing.T) {
	ctx := context.Background()
	stored, unstored := bytesIDs("a")
	path := appDB(t, stored...)
	cfg := appConfig(path)
	cfg.Compare = syncfilter.CompareBytes
	held := set(stored)
	r := rand.New(rand.NewPCG(1, 2))

	ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	checkBytesPage(t, ctx, ix, bytesPage(r, stored, unstored, 30), held, "never attached")
	waitServing(t, ix)
	for range 5 {
		checkBytesPage(t, ctx, ix, bytesPage(r, stored, unstored, 30), held, "serving")
	}

	more, unstored2 := bytesIDs("b")
	insertIDs(t, rawDB(t, path), more...)
	stored, unstored = append(stored, more...), append(unstored, unstored2...)
	held = set(stored)
	for range 5 {
		checkBytesPage(t, ctx, ix, bytesPage(r, stored, unstored, 30), held, "after inserts")
	}
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if s, err := readSnap(t, path, cfg.Snapshot); err != nil {
		t.Fatal(err)
	} else if s.Header.Policy != syncfilter.PolicyBytes || s.Header.Params.Compare != syncfilter.CompareBytes {
		t.Fatalf("snapshot policy %q (compare %v), want %q", s.Header.Policy, s.Header.Params.Compare, syncfilter.PolicyBytes)
	}

	ix = open(t, cfg)
	if st := ix.Stats(); !st.Serving {
		t.Fatalf("the reopened index does not serve from its snapshot: %+v", st)
	}
	for range 5 {
		checkBytesPage(t, ctx, ix, bytesPage(r, stored, unstored, 30), held, "reopened")
	}

	own := config{DBConfig: cfg.DBConfig, Source: Source{Compare: syncfilter.CompareBytes}}
	oix := open(t, own)
	nfd := "own-cafe\u0301"
	if err := oix.MarkFetched(ctx, nfd); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]bool{nfd: true, norm.NFC.String(nfd): false} {
		if got, err := oix.Fetched(ctx, k); err != nil || got != want {
			t.Errorf("own table: Fetched(%+q) = %v, %v; want %v", k, got, err, want)
		}
	}
}

// TestCompareRecorded: the database records how a source compares ids
// at its first attach; an open in the other mode is ErrBadConfig and
// writes nothing, and a snapshot of one mode is never read for the
// other. A row of a database from before the record compares
// canonically.
func TestCompareRecorded(t *testing.T) {
	ctx := context.Background()
	for _, first := range []syncfilter.Compare{syncfilter.CompareCanonical, syncfilter.CompareBytes} {
		t.Run(first.String(), func(t *testing.T) {
			path := appDB(t, "a", "b\u0301")
			cfg := appConfig(path)
			cfg.Compare = first
			ix := open(t, cfg)
			waitServing(t, ix)
			if err := ix.Close(ctx); err != nil {
				t.Fatal(err)
			}
			before := dbState(t, path, cfg.Snapshot)
			other := cfg
			other.Compare = 1 - first
			ix, err := Open(ctx, other.DBConfig, other.Source)
			if err == nil {
				_, err = ix.Missing(ctx, []string{"a"})
				_ = ix.Close(ctx)
			}
			if !errors.Is(err, ErrBadConfig) {
				t.Fatalf("opened comparing %v a source attached comparing %v: %v", other.Compare, first, err)
			}
			if after := dbState(t, path, cfg.Snapshot); after != before {
				t.Errorf("the refused open changed the database or the snapshot:\n before %q\n after  %q", before, after)
			}
			mustExec(t, rawDB(t, path), `INSERT INTO records (id) VALUES ('after the refusal')`) // the app goes on
			// The snapshot's policy names its mode: the other mode's
			// check refuses it.
			s, err := snapshot.ReadClaim(cfg.Snapshot)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.CheckPolicy(other.Compare.Policy(), s.UnicodeVersion); !errors.Is(err, snapshot.ErrIncompatible) {
				t.Errorf("a %v snapshot passes the %v check: %v", first, other.Compare, err)
			}
		})
	}

	t.Run("before the record", func(t *testing.T) {
		path := appDB(t, "a")
		cfg := appConfig(path)
		ix := open(t, cfg)
		if err := ix.Close(ctx); err != nil {
			t.Fatal(err)
		}
		needDropColumn(t, rawDB(t, path))
		mustExec(t, rawDB(t, path), `ALTER TABLE syncfilter_sources DROP COLUMN compare`)
		bytesCfg := cfg
		bytesCfg.Compare = syncfilter.CompareBytes
		if ix, err := Open(ctx, bytesCfg.DBConfig, bytesCfg.Source); err == nil {
			_, err = ix.Missing(ctx, []string{"a"})
			_ = ix.Close(ctx)
			if !errors.Is(err, ErrBadConfig) {
				t.Errorf("a row of before the record opened comparing bytes: %v", err)
			}
		} else if !errors.Is(err, ErrBadConfig) {
			t.Errorf("a row of before the record: %v", err)
		}
		ix = open(t, cfg)
		if got, err := missingList(ctx, ix, []string{"a", "b"}); err != nil || !slices.Equal(got, []string{"b"}) {
			t.Errorf("canonical open of a row of before the record: missing %q, %v", got, err)
		}
		// A new source in such a database adds the column, recording its
		// mode, and leaves the old row canonical.
		mustExec(t, rawDB(t, path), `CREATE TABLE other (id TEXT PRIMARY KEY)`)
		mustExec(t, rawDB(t, path), `INSERT INTO other VALUES (?)`, "cafe\u0301")
		oix := open(t, config{DBConfig: cfg.DBConfig, Source: Source{Table: "other", Column: "id", Compare: syncfilter.CompareBytes}})
		if got, err := missingList(ctx, oix, []string{"cafe\u0301", "caf\u00e9"}); err != nil || !slices.Equal(got, []string{"caf\u00e9"}) {
			t.Errorf("bytes source added to a database of before the record: missing %q, %v", got, err)
		}
		var modes string
		if err := rawDB(t, path).QueryRow(`SELECT group_concat(tbl || '=' || compare || '/' || length(positions_key), ' ') FROM syncfilter_sources`).Scan(&modes); err != nil {
			t.Fatal(err)
		}
		if modes != "records=nfc/1/32 other=bytes/1/39" {
			t.Errorf("recorded modes and key lengths: %q", modes)
		}
	})
}

// dbState is the schema, the library's records of its sources and the
// snapshot file's bytes: equal states mean nothing was written.
func dbState(t *testing.T, path, snap string) string {
	t.Helper()
	var rows string
	if err := rawDB(t, path).QueryRow(`SELECT group_concat(quote(id) || quote(dataset_id) || quote(epoch) || quote(scanned) || quote(snapshot) ||
		quote(positions_key) || quote(lowest_version) || quote(compare), ';') FROM syncfilter_sources`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	return string(schema(t, path)) + rows + string(file)
}
