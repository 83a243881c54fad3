package syncbench

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// testRunner starts real-loop children as this test binary (TestMain).
func testRunner() RealRunner {
	return RealRunner{Child: func(args ...string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "SYNCBENCH_TEST_REAL_CHILD="+strings.Join(args, "\n"))
		return cmd
	}}
}

// tinyConfig is a run of 16 pages with every kind and every event.
func tinyConfig() RealConfig {
	return RealConfig{
		PagesConfig: PagesConfig{Seed: 7, Rows: 2000, Names: 120, Kinds: MixedKinds, MinSize: 20, MaxSize: 60},
		Driver:      Mattn.Name, Pages: 16, Wait: WaitSpec{0, 0},
		AddColumnAt: 4, RebuildAt: 8, RestartAt: 12, CrashPages: 2,
	}
}

func TestRealLoopTiny(t *testing.T) {
	useCache(t)
	tw, err := testRunner().Twins(context.Background(), "mixed", tinyConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, cell := range []*RealCell{tw.Lib, tw.InList} {
		if len(cell.Children) != 3 || !cell.Children[1].Segment.Abandon {
			t.Fatalf("children %+v: want 3, the second exiting without Close", cell.Children)
		}
	}
	if !tw.Lib.Config.LibFirst || tw.InList.Config.LibFirst {
		t.Errorf("twins' orders: library first %v and %v, want true and false", tw.Lib.Config.LibFirst, tw.InList.Config.LibFirst)
	}
	pages := tw.Pages()
	var marks []string
	blind := 0
	for i, p := range pages {
		if p.Page != i || p.Lib <= 0 || p.InList <= 0 || p.LibSecond <= 0 || p.InListSecond <= 0 || p.LibAllocs == 0 ||
			p.Size < 20 || p.Size > 60 || p.Kind != MixedKinds[i%4] {
			t.Errorf("page %d: %+v", i, p)
		}
		if p.InListIDs != p.Size {
			t.Errorf("page %d: the IN-list bound %d of its %d ids", i, p.InListIDs, p.Size)
		}
		if p.Lib != tw.Lib.Pages()[i].Lib || p.InList != tw.InList.Pages()[i].InList {
			t.Errorf("page %d: times not taken from the twin where each side ran first", i)
		}
		if p.Mark != "" {
			marks = append(marks, p.Mark)
		}
		blind += p.InListBlind
	}
	if want := SpecialMarks; !slices.Equal(marks, want) {
		t.Errorf("marks %q, want %q", marks, want)
	}
	if blind == 0 {
		t.Error("the IN-list was never blind: no name stored in NFD was asked")
	}
	var b strings.Builder
	if err := WriteRealTables(&b, []*RealTwins{tw}); err != nil {
		t.Fatal(err)
	}
	for _, want := range append(marks, "| mixed | 20–60 | 0 | 0 | Unicode names |", "| mixed | 20–60 | 0 | 0 | every page |") {
		if !strings.Contains(b.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, b.String())
		}
	}
}

// TestRealLoopUnattached: with Unattached no snapshot is built, the first
// page is marked as the first on a table never attached, and every page
// is judged as in any run (a wrong answer fails the run).
func TestRealLoopUnattached(t *testing.T) {
	useCache(t)
	cfg := tinyConfig()
	cfg.Pages, cfg.AddColumnAt, cfg.RebuildAt, cfg.RestartAt, cfg.Unattached = 6, -1, -1, -1, true
	rr := testRunner()
	rr.AfterPrepare = func(cfg RealConfig) error {
		if _, err := os.Stat(cfg.Snapshot); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a snapshot before the run: %v", err)
		}
		return nil
	}
	tw, err := rr.Twins(context.Background(), "mixed", cfg)
	if err != nil {
		t.Fatal(err)
	}
	pages := tw.Pages()
	if len(pages) != 6 || pages[0].Mark != MarkUnattached {
		t.Fatalf("pages %d, first marked %q; want 6, %q", len(pages), pages[0].Mark, MarkUnattached)
	}
	for _, p := range pages[1:] {
		if p.Mark != "" {
			t.Errorf("page %d marked %q", p.Page, p.Mark)
		}
	}
}

// TestTwinsThatDifferFail: twins that saw other pages are refused.
func TestTwinsThatDifferFail(t *testing.T) {
	page := func(n int, d uint64) RealPage { return RealPage{Page: n, Kind: KindResend, Size: 10, Digest: d} }
	cell := func(ps ...RealPage) *RealCell { return &RealCell{Children: []RealChildReport{{Pages: ps}}} }
	tw := &RealTwins{Variant: "mixed", Lib: cell(page(0, 1), page(1, 2)), InList: cell(page(0, 1), page(1, 2))}
	if err := tw.Check(); err != nil {
		t.Fatalf("same pages: %v", err)
	}
	tw.InList = cell(page(0, 1), page(1, 3))
	if err := tw.Check(); err == nil || !strings.Contains(err.Error(), "TWINS DIFFER") {
		t.Errorf("other ids on page 1: %v", err)
	}
	tw.InList = cell(page(0, 1))
	if err := tw.Check(); err == nil {
		t.Error("a page missing: no error")
	}
}

// TestRealLoopFailsOnWrongAnswers changes half the stored ids behind the
// reference's back (the row count stays): the run must fail loudly.
func TestRealLoopFailsOnWrongAnswers(t *testing.T) {
	useCache(t)
	rr := testRunner()
	rr.AfterPrepare = func(cfg RealConfig) error {
		db, err := sql.Open(Mattn.SQLName, DSN(cfg.DB, AppDSNOptions))
		if err != nil {
			return err
		}
		_, err = db.Exec(`UPDATE records SET id = id || '-gone' WHERE rowid % 2 = 0`)
		return errors.Join(err, db.Close())
	}
	cfg := tinyConfig()
	cfg.Kinds = []string{KindResend}
	_, err := rr.Run(context.Background(), "mixed", cfg)
	if err == nil || !strings.Contains(err.Error(), "WRONG ANSWER") {
		t.Fatalf("run on a table the reference does not describe: %v; want a wrong answer reported", err)
	}
	t.Log(err)
}

func TestRealInitialTiny(t *testing.T) {
	useCache(t)
	tw, err := testRunner().Twins(context.Background(), "initial", InitialConfig(Mattn.Name, 3000, 500, WaitSpec{}, 1))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tw.Pages()); n != 6 {
		t.Fatalf("%d pages, want 6", n)
	}
	for _, p := range tw.Pages() {
		if p.New != 500 || p.Size != 500 {
			t.Errorf("page %+v: want 500 new ids", p)
		}
	}
	var b strings.Builder
	if err := WriteInitialTable(&b, []*RealTwins{tw}); err != nil || !strings.Contains(b.String(), "| 3,000 | 500 | 0 | 0 | 6 |") {
		t.Errorf("table %q, %v", b.String(), err)
	}
}

func TestPagesReplay(t *testing.T) {
	cfg := tinyConfig().PagesConfig
	a, err := NewPages(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var pages []Page
	for n := range 24 {
		pg, err := a.Next(n)
		if err != nil {
			t.Fatal(err)
		}
		a.Stored(pg)
		pages = append(pages, pg)
	}
	b, _ := NewPages(cfg)
	if err := b.Replay(12); err != nil {
		t.Fatal(err)
	}
	for n := 12; n < 24; n++ {
		pg, err := b.Next(n)
		if err != nil {
			t.Fatal(err)
		}
		b.Stored(pg)
		if !slices.Equal(pg.IDs, pages[n].IDs) || !slices.Equal(pg.Want, pages[n].Want) {
			t.Fatalf("page %d replayed differs", n)
		}
	}
	if a.Ref.Len() != b.Ref.Len() {
		t.Errorf("references hold %d and %d ids", a.Ref.Len(), b.Ref.Len())
	}
	for _, pg := range pages {
		stored := 0
		for _, w := range pg.Want {
			if !w {
				stored++
			}
		}
		if want := (len(pg.IDs)*storedPct[pg.Kind] + 50) / 100; stored != want {
			t.Errorf("page %d (%s): %d of %d stored, want %d", pg.N, pg.Kind, stored, len(pg.IDs), want)
		}
	}
}

func TestReferenceIsCanonical(t *testing.T) {
	r := NewReference(10)
	if !r.Has(RandomUUID.ID(3)) || r.Has(RandomUUID.ID(10)) || r.Has(strings.ToUpper(RandomUUID.ID(3))) {
		t.Error("base UUIDs: stored, new and uppercase (another id) answered wrong")
	}
	name := Name(1)
	r.Add(norm.NFD.String(name))
	if !r.Has(name) || !r.Has(norm.NFD.String(name)) || norm.NFC.String(name) == norm.NFD.String(name) {
		t.Errorf("%q stored in NFD: not found in both spellings (or the name has only one)", name)
	}
	if err := Judge("x", []string{"a", "b"}, []bool{true, false}, []bool{true, true}); err == nil || !strings.Contains(err.Error(), `"b" answered fetched, it is not fetched`) {
		t.Errorf("Judge of a wrong answer: %v", err)
	}
}

// TestBothSidesPerPosition asks both sides about a page that repeats an
// id and holds a name stored in NFD in both spellings: the library must
// find it, the IN-list of NFC spellings cannot.
func TestBothSidesPerPosition(t *testing.T) {
	useCache(t)
	ctx := context.Background()
	cfg := tinyConfig()
	dir := t.TempDir()
	cfg.DB, cfg.Snapshot = dir+"/app.db", dir+"/app.db.sfb"
	if err := prepareReal(ctx, Mattn, cfg); err != nil {
		t.Fatal(err)
	}
	pool, err := OpenAppPool(ctx, Mattn, cfg.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	lib, err := OpenLib(ctx, Mattn, cfg.DB, cfg.Snapshot, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close(ctx)
	nfdStored := SetupNames(1)[0] // name 0 is stored in NFD
	page := []string{RandomUUID.ID(5), RandomUUID.ID(9999), RandomUUID.ID(9999), norm.NFC.String(nfdStored), nfdStored, Name(99999)}
	want := []bool{false, true, true, false, false, true}
	got, _, err := lib.Missing(ctx, page)
	if err := errors.Join(err, Judge("library", page, got, want)); err != nil {
		t.Error(err)
	}
	got, err = pool.InList(ctx, page)
	if err != nil {
		t.Fatal(err)
	}
	// The IN-list asks the NFC spelling only: the name stored in NFD is
	// not fetched, to it, in either spelling.
	inWant := []bool{false, true, true, true, true, true}
	ref, err := NewPages(cfg.PagesConfig)
	if err != nil {
		t.Fatal(err)
	}
	if w := ref.Ref.InListTruth(page); !slices.Equal(w, inWant) {
		t.Errorf("InListTruth %v, want %v", w, inWant)
	}
	if err := Judge("in-list", page, got, inWant); err != nil {
		t.Error(err)
	}
	if n := Differ(inWant, want); n != 2 {
		t.Errorf("the IN-list is blind at %d positions, want 2", n)
	}
}

// TestDriverNotLinkedRefused: a driver this binary does not link (modernc
// without -tags modernc) is refused before anything opens.
func TestDriverNotLinkedRefused(t *testing.T) {
	if _, err := DriverNamed(Modernc.Name); err == nil {
		t.Skip("built with modernc")
	}
	if err := CheckLibDriver(Modernc); err == nil {
		t.Error("modernc, not linked: no error")
	}
	if _, err := OpenLib(context.Background(), Modernc, filepath.Join(t.TempDir(), "x.db"), "", nil); err == nil {
		t.Error("OpenLib with modernc, not linked: no error")
	}
}

func TestSingleAndCollectionsTiny(t *testing.T) {
	useCache(t)
	ctx := context.Background()
	s, err := RealSingle(ctx, SingleOptions{Driver: Mattn.Name, Rows: 2000, Ops: 40, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Lib[Stored]) + len(s.Lib[New]); n != 40 || len(s.Select[New]) != len(s.Lib[New]) {
		t.Errorf("single ids: %d ops timed, want 40 of each side", n)
	}
	c, err := RealCollections(ctx, CollectionsOptions{Driver: Mattn.Name, Rows: 2000, N: 3, Reps: 2, Page: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Open[0]) != 2 || len(c.Open[1]) != 2 {
		t.Errorf("collections: %d and %d reps, want 2 each", len(c.Open[0]), len(c.Open[1]))
	}
	var b strings.Builder
	if err := errors.Join(WriteSingleTable(&b, []*SingleResult{s}), WriteCollectionsTable(&b, []*CollectionsResult{c})); err != nil {
		t.Fatal(err)
	}
}

func TestSQLDriver(t *testing.T) {
	drv, err := Mattn.SQLDriver()
	if err != nil || drv == nil {
		t.Fatalf("mattn's registered driver: %v, %v", drv, err)
	}
}

func TestStoredOnlyBindsTheStoredIDs(t *testing.T) {
	page := []string{"a", "b", "c", "d"}
	ids, truth := storedOnly(page, []bool{true, false, true, false})
	if !slices.Equal(ids, []string{"b", "d"}) || !slices.Equal(truth, []bool{false, false}) {
		t.Errorf("stored ids %q %v, want b, d found", ids, truth)
	}
	ids, truth = storedOnly(page, []bool{true, true, true, true})
	if !slices.Equal(ids, []string{"a"}) || !slices.Equal(truth, []bool{true}) {
		t.Errorf("none stored: %q %v, want the first id, not found", ids, truth)
	}
}

// TestRealLoopStoredOnly: with StoredOnly the IN-list side binds the
// stored ids alone (the first id when none is), judged: a child fails on
// one wrong answer.
func TestRealLoopStoredOnly(t *testing.T) {
	useCache(t)
	cfg := tinyConfig()
	cfg.AddColumnAt, cfg.RebuildAt, cfg.RestartAt = -1, -1, -1
	cfg.StoredOnly = true
	tw, err := testRunner().Twins(context.Background(), "mixed", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if tw.Lib.Config.Baseline() != "stored-only" {
		t.Errorf("baseline %q, want stored-only", tw.Lib.Config.Baseline())
	}
	fewer := 0
	for _, p := range tw.Pages() {
		if p.InList <= 0 {
			t.Errorf("page %d: the stored ids' IN-list was not timed", p.Page)
		}
		if most := max(1, p.Size-p.New); p.InListIDs < 1 || p.InListIDs > most {
			t.Errorf("page %d (%s, %d ids, %d new): the IN-list bound %d ids, want 1 to %d", p.Page, p.Kind, p.Size, p.New, p.InListIDs, most)
		}
		if p.InListIDs < p.Size {
			fewer++
		}
	}
	if fewer == 0 {
		t.Error("every page's IN-list bound the whole page")
	}
}
