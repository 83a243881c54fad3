package rebuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/snapshot"
	"golang.org/x/text/unicode/norm"
)

// mixedPage is one page that names ids again and in other spellings:
// a never-stored id three times, a stored id three times, the NFC and
// NFD spellings of an id the app stored in NFD (and of one it never
// stored), an id stored with a KELVIN SIGN asked with an ASCII K and the
// other way round, and invalid keys (not UTF-8, longer than
// MaxKeyBytes) between them. missing is the answer each position must
// get; bad the positions of the invalid keys.
func mixedPage() (page []string, missing []bool, bad []int) {
	rows := []struct {
		key     string
		missing bool
	}{
		{"never-1", true},
		{"never-1", true},
		{"plain-s", false},
		{"caf\u00e9-s", false},  // NFC of the id stored in NFD
		{"cafe\u0301-s", false}, // the stored spelling
		{"bad\xff", true},
		{"plain-s", false},
		{"never-1", true},
		{strings.Repeat("x", MaxKeyBytes+1), true},
		{"cafe\u0301-n", true}, // never stored, in NFD
		{"caf\u00e9-n", true},  // and in NFC
		{"caf\u00e9-s", false},
		{"K-s", false}, // stored as "\u212a-s"
		{"\u212a-s", false},
		{"\xc3", true},
		{"\u212a-n", true},
		{"plain-s", false},
		{"cafe\u0301-n", true},
	}
	for i, r := range rows {
		page = append(page, r.key)
		missing = append(missing, r.missing)
		if r.key == "bad\xff" || r.key == "\xc3" || len(r.key) > MaxKeyBytes {
			bad = append(bad, i)
		}
	}
	return page, missing, bad
}

// checkMixed asks the mixed page through Missing and compares every
// position with mixedPage's answers, and with the reference computed
// from the table; Fetched agrees for every valid key.
func checkMixed(t *testing.T, ix *Index, path, what string) {
	t.Helper()
	page, want, bad := mixedPage()
	got, err := ix.Missing(context.Background(), page)
	var ike *InvalidKeysError
	if !errors.As(err, &ike) || !slices.Equal(positions(ike), bad) {
		t.Fatalf("%s: Missing error %v, want an *InvalidKeysError naming %v", what, err, bad)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: Missing = %v\nwant %v", what, got, want)
	}
	judgePage(t, ix, storedCanon(t, path, "records"), page, true, what)
}

// TestEveryPositionAnsweredOnItsOwn: a page that repeats a never-stored
// id, repeats a stored id, names an id the app stored in NFD (a plain
// INSERT on its own connection) in both spellings, and holds invalid
// keys gets one answer per position, each right, whichever way it is
// answered: a serving filter (through a probe, and again without one),
// the app's pool, bypass while a rebuild runs, a read-only index with a
// snapshot, without one, and on a table never attached.
func TestEveryPositionAnsweredOnItsOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 300)
	stored := []string{"plain-s", "cafe\u0301-s", "\u212a-s"}

	newDB := func(t *testing.T) string {
		path := appDB(t, seed...)
		insertIDs(t, rawDB(t, path), stored...) // the app's own INSERT, stored as spelled
		return path
	}

	t.Run("serving", func(t *testing.T) {
		t.Parallel()
		path := newDB(t)
		ix := open(t, appConfig(path))
		if !stats(ix).Serving {
			t.Fatal("not serving")
		}
		checkMixed(t, ix, path, "serving")
		checkMixed(t, ix, path, "serving, asked again")
	})

	t.Run("serving, rows stored after open", func(t *testing.T) {
		t.Parallel()
		path := appDB(t, seed...)
		cfg := appConfig(path)
		cfg.knobs.noFollow = true
		ix := open(t, cfg)
		insertIDs(t, rawDB(t, path), stored...)
		checkMixed(t, ix, path, "serving, stored after open")
	})

	t.Run("the app's pool", func(t *testing.T) {
		t.Parallel()
		path := appDB(t, seed...)
		app := rawDB(t, path)
		cfg := appConfig(path)
		cfg.DB, cfg.Driver = app, nil
		ix := open(t, cfg)
		insertIDs(t, app, stored...)
		checkMixed(t, ix, path, "confirmed on the app's pool")
	})

	t.Run("bypass during a rebuild", func(t *testing.T) {
		t.Parallel()
		path := newDB(t)
		cfg, hk := hooked(appConfig(path))
		ix := open(t, cfg)
		entered, release := scanGate(t, hk)
		done := make(chan error, 1)
		go func() { done <- ix.Rebuild(ctx) }()
		waitClosed(t, entered, "the rebuild's scan")
		if st := stats(ix); !st.Rebuilding || st.Serving {
			t.Fatalf("rebuilding %v, serving %v", st.Rebuilding, st.Serving)
		}
		checkMixed(t, ix, path, "bypass")
		release()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		checkMixed(t, ix, path, "after the rebuild")
	})

	for _, tc := range []struct {
		name     string
		attached bool
		snapshot bool
	}{
		{"read-only, snapshot", true, true},
		{"read-only, no snapshot", true, false},
		{"read-only, never attached", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := newDB(t)
			ix := readOnlyIndex(t, path, tc.attached, tc.snapshot)
			checkMixed(t, ix, path, tc.name)
		})
	}
}

// TestMissingOfRepeatsAcrossAPage: the sync loop's own pattern, a page
// that names one never-stored id at every other position and stored ids
// between, answers each position; an id the page names first missing,
// then (after the app stored it) fetched, is answered at every position
// of the next page.
func TestMissingOfRepeatsAcrossAPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, ids("seed", 100)...)
	ix := open(t, appConfig(path))
	var page []string
	for i := range 100 {
		page = append(page, "never-1", ids("seed", 100)[i])
	}
	for round, stored := range []bool{false, true} {
		if stored {
			insertIDs(t, rawDB(t, path), "never-1")
		}
		got, err := ix.Missing(ctx, page)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range got {
			if want := i%2 == 0 && !stored; m != want {
				t.Fatalf("round %d: position %d (%q) missing %v, want %v", round, i, page[i], m, want)
			}
		}
	}
	judgePage(t, ix, storedCanon(t, path, "records"), page, false, fmt.Sprintf("%d positions", len(page)))
}

// TestEndedContextsSayTheirError: a call whose context ended fails with
// an error that is the context's (errors.Is), whichever path it takes
// (quiet, lookup, probe, bypass) and whatever the driver reports for an
// interrupted statement.
func TestEndedContextsSayTheirError(t *testing.T) {
	t.Parallel()
	seed := ids("seed", 200)
	ix := open(t, appConfig(appDB(t, seed...)))
	cctx, cancel := context.WithCancelCause(context.Background())
	why := errors.New("the app gave up")
	cancel(why)
	for name, call := range map[string]func() error{
		"Fetched stored": func() error { _, err := ix.Fetched(cctx, seed[1]); return err },
		"Fetched new":    func() error { _, err := ix.Fetched(cctx, "never-1"); return err },
		"Fetched NFD":    func() error { _, err := ix.Fetched(cctx, "cafe\u0301"); return err },
		"Missing":        func() error { _, err := ix.Missing(cctx, append(seed[:5:5], "never-2", "cafe\u0301")); return err },
	} {
		if err := call(); !errors.Is(err, why) {
			t.Errorf("%s with an ended context = %v, want its cause", name, err)
		}
	}
}

// TestFetchedAndMissingAgree: the single-key and the page paths give the
// same answer for every key, stored in NFC or NFD, asked in either form,
// in bypass (read-only and writable) and with a filter serving.
func TestFetchedAndMissingAgree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	words := []string{"Ångström", "café", "Łódź", "ﬁle", "한국어", "\u212a", "K", "e\u0301", "plain",
		// Bytes that travel through JSON escaped, both ways (the keys go to
		// SQLite as a JSON array, the found ones come back as one).
		"nul\x00inside", "quote\"back\\slash", "tab\tnew\nline\x01", "\u2028sep\u2029", "<tag>&amp;", "😀\U0010fffd", "\x7f", "Ångström\x00"}
	var stored, probe []string
	for i, w := range words {
		nfc, nfd := norm.NFC.String(w), norm.NFD.String(w)
		if i%2 == 0 {
			stored = append(stored, fmt.Sprintf("%s-%d", nfc, i))
		} else {
			stored = append(stored, fmt.Sprintf("%s-%d", nfd, i))
		}
		probe = append(probe, fmt.Sprintf("%s-%d", nfc, i), fmt.Sprintf("%s-%d", nfd, i), fmt.Sprintf("%s-%d-never", nfc, i))
	}
	probe = append(probe, ids("never", 100)...)
	path := appDB(t, stored...)
	agree := func(t *testing.T, ix *Index, wantServing bool) {
		t.Helper()
		if got := stats(ix).Serving; got != wantServing {
			t.Fatalf("serving %v, want %v", got, wantServing)
		}
		missing, err := missingList(ctx, ix, probe)
		if err != nil {
			t.Fatal(err)
		}
		isMissing := set(missing)
		for _, k := range probe {
			got, err := ix.Fetched(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if got == isMissing[k] {
				t.Fatalf("Fetched(%+q) = %v but Missing says missing=%v", k, got, isMissing[k])
			}
			if want := !strings.HasSuffix(k, "never") && !strings.HasPrefix(k, "never"); got != want {
				t.Fatalf("Fetched(%+q) = %v, want %v", k, got, want)
			}
		}
	}
	t.Run("read-only bypass", func(t *testing.T) {
		agree(t, open(t, config{DBConfig: DBConfig{Path: path, ReadOnly: true, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id"}}), false)
	})
	cfg := appConfig(path)
	t.Run("serving", func(t *testing.T) {
		ix := open(t, cfg)
		agree(t, ix, true)
		if err := ix.Close(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("bypass", func(t *testing.T) {
		if err := os.WriteFile(cfg.Snapshot, snapshot.Magic[:], 0o600); err != nil { // damaged: refused, and replaceable
			t.Fatal(err)
		}
		c := cfg
		c.NoAutoRebuild = true
		agree(t, open(t, c), false)
	})
}

func TestOwnTableMarkFetchedAndQueries(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "own.db")
	ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{}})
	ctx := context.Background()
	first, later, never := ids("a", 500), ids("b", 500), ids("c", 500)
	if err := ix.MarkFetched(ctx, first...); err != nil {
		t.Fatal(err)
	}
	probe := append(append(slices.Clone(first), later...), never...)
	expect(t, ix, set(first), probe)
	if err := ix.MarkFetched(ctx, later...); err != nil {
		t.Fatal(err)
	}
	expect(t, ix, set(first, later), probe)

	st := stats(ix)
	if !st.Serving || st.LookupsAvoided == 0 || st.ConfirmedPositives == 0 {
		t.Fatalf("stats: %+v", st)
	}
	if st.Queries != st.LookupsAvoided+st.ConfirmedPositives+st.FalsePositives+st.BypassLookups {
		t.Fatalf("queries %d != negatives + confirmed + false positives + bypass: %+v", st.Queries, st)
	}
	// Reopen: the snapshot was not configured, so a rebuild runs; the
	// table keeps the truth.
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Fetched(ctx, "a-0000001"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Fetched after Close: %v", err)
	}
	again := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{}})
	waitServing(t, again)
	expect(t, again, set(first, later), probe)
}
