package rebuild

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/keycorpus"
	"github.com/syncfilter/syncfilter/internal/testdriver"
	"golang.org/x/text/unicode/norm"
)

// The property test over keys: ids built from pieces that each have one
// or several canonically equivalent spellings (NUL and the other control
// characters, combining marks in any order, Hangul jamo, the KELVIN SIGN
// for "K", ...) and pieces whose NFKC is another piece but whose NFC is
// not ("ﬁ" and "fi": different records), plus keys near MaxKeyBytes, are
// stored in random spellings by the app's own connection and asked in
// random spellings, repeated, between invalid keys, through every path;
// every answer is judged against the table (judgePage).

// propertyTime is how long the rounds of TestKeysProperty run:
// SYNCFILTER_PROPERTY_TIME, 1s by default (at least one round of each
// path runs, however long it takes).
func propertyTime(t *testing.T) time.Duration {
	if s := os.Getenv("SYNCFILTER_PROPERTY_TIME"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("SYNCFILTER_PROPERTY_TIME=%s: %v", s, err)
		}
		return d
	}
	return time.Second
}

// propertySeed is SYNCFILTER_PROPERTY_SEED, or a new seed each run.
func propertySeed(t *testing.T) uint64 {
	if s := os.Getenv("SYNCFILTER_PROPERTY_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SYNCFILTER_PROPERTY_SEED=%s: %v", s, err)
		}
		return seed
	}
	return rand.Uint64()
}

// piece is a part of an id: its spellings, all canonically equivalent.
type piece []string

// pieces returns what ids are built from: pieces with their spellings,
// control characters, and pairs of pieces of which NFKC maps the first
// onto the second.
func pieces() (plain, controls []piece, compat [][2]piece) {
	for _, g := range keycorpus.Groups() {
		if g.NFC == "" || len(g.NFC) > 1000 {
			continue // ids have a prefix; the long keys are built apart
		}
		plain = append(plain, piece(g.Spellings))
	}
	plain = append(plain, piece{";", "\u037e"}, piece{"`", "\u1fef"}, piece{"K", "\u212a"})
	for _, c := range append(rangeBytes(0, 0x1f), 0x7f) {
		controls = append(controls, piece{string(rune(c))})
	}
	// NFKC maps the first onto the second, NFC does not: two records.
	for _, p := range [][2]string{
		{"\ufb01", "fi"}, {"\u2460", "1"}, {"\uff71", "\u30a2"}, {"\u2168", "IX"},
		{"\u00b2", "2"}, {"\u3392", "MHz"}, {"\u01c6", "d\u017e"}, {"\u212b\u0301", "\u01fa"},
	} {
		compat = append(compat, [2]piece{{p[0]}, {p[1], norm.NFD.String(p[1])}})
	}
	return plain, controls, compat
}

// universe is the ids a run stores and asks about, by the pieces they
// are made of, and invalid keys.
type universe struct {
	ids [][]piece
	bad []string
}

// newUniverse builds n ids from seed (the same seed builds the same
// ids, in a child process too): a numbered ASCII prefix, then one to four
// pieces; an id with a compatibility piece has a twin with the piece
// NFKC maps it onto. And four long ids: one whose NFC is near
// MaxKeyBytes (its NFD spelling, longer, can be stored but not asked),
// one of exactly MaxKeyBytes, one just over (never a key), one whose NUL
// comes before a long run of accents.
func newUniverse(seed uint64, n int) *universe {
	rng := newRand(seed)
	plain, controls, compat := pieces()
	u := &universe{bad: []string{"bad\xff", "\xc3", "\xed\xa0\x80", "sur\x00\xed\xbf\xbf", "x\xf4\x90\x80\x80", strings.Repeat("k", MaxKeyBytes+1)}}
	for i := 0; len(u.ids) < n; i++ {
		id := []piece{{fmt.Sprintf("p%04d-", i)}}
		var twin []piece
		for range 1 + rng.IntN(4) {
			var p piece
			switch x := rng.IntN(20); {
			case x < 3:
				c := compat[rng.IntN(len(compat))]
				if twin == nil {
					twin = slices.Clone(id)
				}
				id, twin = append(id, c[0]), append(twin, c[1])
				continue
			case x < 6:
				p = controls[0] // NUL
			case x < 9:
				p = controls[rng.IntN(len(controls))]
			default:
				p = plain[rng.IntN(len(plain))]
			}
			id = append(id, p)
			if twin != nil {
				twin = append(twin, p)
			}
		}
		u.ids = append(u.ids, id)
		if twin != nil {
			u.ids = append(u.ids, twin)
		}
	}
	const runs = (MaxKeyBytes - 16) / 2
	u.ids = append(u.ids,
		[]piece{{"long-nfc-"}, {strings.Repeat("\u00e9", runs), strings.Repeat("e\u0301", runs)}},
		[]piece{{strings.Repeat("k", MaxKeyBytes-5)}, {"-max"}},
		[]piece{{strings.Repeat("k", MaxKeyBytes-4)}, {"-over"}},
		[]piece{{"long-nul\x00"}, {strings.Repeat("\u1ec7", 1000), strings.Repeat("e\u0323\u0302", 1000)}},
	)
	return u
}

// spell returns a random spelling of id i: a random spelling of each of
// its pieces.
func (u *universe) spell(rng *rand.Rand, i int) string {
	var b strings.Builder
	for _, p := range u.ids[i] {
		b.WriteString(p[rng.IntN(len(p))])
	}
	return b.String()
}

// page returns n keys: random spellings of random ids, an earlier key of
// the page again, an invalid key now and then.
func (u *universe) page(rng *rand.Rand, n int) []string {
	var page []string
	for len(page) < n {
		switch x := rng.IntN(100); {
		case x < 10 && len(page) > 0:
			page = append(page, page[rng.IntN(len(page))])
		case x < 15:
			page = append(page, u.bad[rng.IntN(len(u.bad))])
		default:
			page = append(page, u.spell(rng, rng.IntN(len(u.ids))))
		}
	}
	return page
}

// store has the app store n random ids in random spellings (an invalid
// one now and then: the app stores what the server sent), on its own
// connection, in one transaction; a spelling stored already is left.
func (u *universe) store(t testing.TB, rng *rand.Rand, app *sql.DB, n int) {
	t.Helper()
	tx, err := app.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		k := u.spell(rng, rng.IntN(len(u.ids)))
		if rng.IntN(20) == 0 {
			k = u.bad[rng.IntN(len(u.bad))]
		}
		if _, err := tx.Exec(`INSERT OR IGNORE INTO records (id, body) VALUES (?, 'x')`, k); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

const propertyIDs = 300

func init() {
	// property: path, seed. Opens the index, then in rounds stores ids of
	// the universe in random spellings, asks a page, and rebuilds or
	// saves; prints "round N" after each, until it is killed.
	childActs["property"] = func(t *testing.T, args []string) {
		ctx := context.Background()
		seed, err := strconv.ParseUint(args[1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		u := newUniverse(seed, propertyIDs)
		rng := newRand(seed + 1)
		ix := open(t, appConfig(args[0]))
		app := rawDB(t, args[0])
		for r := 0; r < 10_000; r++ {
			u.store(t, rng, app, 20)
			if _, err := ix.Missing(ctx, u.page(rng, 50)); err != nil && !isInvalidKeys(err) {
				t.Fatal(err)
			}
			if r%3 == 2 {
				err = ix.Rebuild(ctx)
			} else {
				err = ix.Save(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			fmt.Printf("round %d\n", r)
		}
	}
}

// TestKeysProperty: random pages of random spellings, through every path:
// a serving filter, bypass while a rebuild scans (rows stored meanwhile),
// read-only indexes (with the snapshot, and from SQLite and the log), a
// reopened index, and, after a child process that stored, asked, rebuilt
// and saved was killed outright (SIGKILL), a reopened one. Each answer is
// judged against the table. The seed is printed on failure
// (SYNCFILTER_PROPERTY_SEED replays it); SYNCFILTER_PROPERTY_TIME runs it
// longer.
func TestKeysProperty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := propertySeed(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay with SYNCFILTER_PROPERTY_SEED=%d", seed)
		}
	})
	mon := newMonitor(t, callBound)
	note := fmt.Sprintf("SYNCFILTER_PROPERTY_SEED=%d", seed)
	mon.note.Store(&note)
	u := newUniverse(seed, propertyIDs)
	rng := newRand(seed + 2)
	path := appDB(t)
	app := rawDB(t, path)
	u.store(t, rng, app, 200)

	cfg, hk := hooked(appConfig(path))
	ix := open(t, cfg)
	ro := map[string]*Index{
		"read-only, snapshot":    open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver(), ReadOnly: true}, Source: Source{Table: "records", Column: "id", Snapshot: cfg.Snapshot}}),
		"read-only, from SQLite": open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver(), ReadOnly: true}, Source: Source{Table: "records", Column: "id"}}),
	}
	var pages, keys int
	judge := func(ix *Index, what string) {
		t.Helper()
		page := u.page(rng, 1+rng.IntN(120))
		pages, keys = pages+1, keys+len(page)
		mon.do(what, func() { judgePage(t, ix, storedCanon(t, path, "records"), page, rng.IntN(4) == 0, what) })
	}

	paths := []string{"serving", "bypass during a rebuild", "read-only, snapshot", "read-only, from SQLite", "reopened"}
	start := time.Now()
	for r := 0; r < len(paths) || time.Since(start) < propertyTime(t); r++ {
		what := fmt.Sprintf("round %d, %s", r, paths[r%len(paths)])
		switch paths[r%len(paths)] {
		case "serving":
			u.store(t, rng, app, 1+rng.IntN(40))
			judge(ix, what)
		case "bypass during a rebuild":
			entered, release := scanGate(t, hk)
			done := make(chan error, 1)
			go func() { done <- ix.Rebuild(ctx) }()
			waitClosed(t, entered, what)
			u.store(t, rng, app, 1+rng.IntN(40))
			judge(ix, what)
			release()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			hk.scanRow.Store(nil)
			judge(ix, what+", rebuilt")
		case "reopened":
			if err := ix.Close(ctx); err != nil {
				t.Fatal(err)
			}
			u.store(t, rng, app, 1+rng.IntN(40))
			cfg, hk = hooked(appConfig(path))
			ix = open(t, cfg)
			judge(ix, what)
		default:
			u.store(t, rng, app, 1+rng.IntN(40))
			judge(ro[paths[r%len(paths)]], what)
		}
	}
	t.Logf("seed %d: %d pages, %d keys judged", seed, pages, keys)
	if testing.Short() {
		return
	}

	// A child process stores, asks, rebuilds and saves until it is
	// killed outright.
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	cmd, lines, stderr := streamChild(t, filepath.Dir(path), "property", path, strconv.FormatUint(seed, 10))
	waitLine(t, lines, "round 3")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if out := drain(lines) + stderr.String(); strings.Contains(out, "FAIL") {
		t.Fatalf("the child failed before it was killed:\n%s", out)
	}
	ix = open(t, appConfig(path))
	for i := range 3 {
		judge(ix, fmt.Sprintf("after the kill, page %d", i))
	}
	// Every valid id of the table, as stored and in NFC.
	var asked []string
	for id := range tableIDs(t, path, "records") {
		if c, ok := canonRef(id, MaxKeyBytes); ok {
			asked = append(asked, id, c)
		}
	}
	slices.Sort(asked)
	mon.do("after the kill, the table's ids", func() {
		judgePage(t, ix, storedCanon(t, path, "records"), asked, false, "after the kill, the table's ids")
	})
}

// isInvalidKeys reports whether err is a page's *InvalidKeysError.
func isInvalidKeys(err error) bool {
	var ike *InvalidKeysError
	return errors.As(err, &ike)
}
