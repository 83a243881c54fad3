package syncbench

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Kinds of pages in the real loop: how many of a page's ids are stored,
// and what the new ones look like.
const (
	KindResend = "resend" // re-sends: 93% stored UUIDs, 7% new random UUIDs
	KindNewV4  = "new-v4" // 70% new random UUIDs (v4), 30% stored
	KindNewV7  = "new-v7" // 70% new time-ordered UUIDs (v7), 30% stored
	KindNames  = "names"  // Unicode names: 58% stored, half of those re-sent in the other normalization; 42% new
	KindAllNew = "all-new"
)

// MixedKinds are the kinds that take turns in the mixed variant.
var MixedKinds = []string{KindResend, KindNewV4, KindNewV7, KindNames}

// storedPct is the share of stored ids on a page of each kind.
var storedPct = map[string]int{KindResend: 93, KindNewV4: 30, KindNewV7: 30, KindNames: 58, KindAllNew: 0}

// PagesConfig says which pages a run asks about.
type PagesConfig struct {
	Seed             uint64
	Rows             int64    // the base table's random UUIDs, ids 0..Rows-1
	Names            int      // Unicode names stored before the run, one in four in NFD
	Kinds            []string // taking turns, page by page
	MinSize, MaxSize int      // ids per page, uniform (seeded)
}

func (c PagesConfig) check() error {
	if c.Rows < 0 || c.Names < 0 || len(c.Kinds) == 0 || c.MinSize < 1 || c.MaxSize < c.MinSize {
		return fmt.Errorf("pages: rows %d, names %d, kinds %v, sizes %d..%d: bad parameters", c.Rows, c.Names, c.Kinds, c.MinSize, c.MaxSize)
	}
	for _, k := range c.Kinds {
		if _, ok := storedPct[k]; !ok {
			return fmt.Errorf("pages: kind %q: want %s or %s", k, MixedKinds, KindAllNew)
		}
	}
	return nil
}

// Pages makes the pages of a run, page after page, from the seed and
// what was stored so far: the same config always gives the same pages,
// so a child process replays the pages before its first (Replay) and
// holds the same reference as the process before it.
type Pages struct {
	cfg      PagesConfig
	Ref      *Reference
	inserted [][16]byte // UUIDs stored after the base table's, in order
	names    []string   // stored names, as spelled in the table
	nextV4   uint64     // new random UUIDs are RandomUUID's Rows, Rows+1, …
	nextV7   uint64     // new time-ordered UUIDs are TimeOrdered's 0, 1, …
	nextName uint64     // new names are Name(Names), Name(Names+1), …
}

// Page is one page the server sends.
type Page struct {
	N    int
	Kind string
	IDs  []string
	Want []bool   // the truth: not fetched
	New  []string // what the app stores after it: the ids not fetched, once each
}

// NewPages returns the generator, its reference holding the base table
// and the names stored before the run (SetupNames).
func NewPages(cfg PagesConfig) (*Pages, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	g := &Pages{cfg: cfg, Ref: NewReference(cfg.Rows), nextV4: uint64(cfg.Rows), nextName: uint64(cfg.Names)}
	for _, id := range SetupNames(cfg.Names) {
		g.Ref.Add(id)
		g.names = append(g.names, id)
	}
	return g, nil
}

// SetupNames returns the names the app stored before the run, spelled as
// stored.
func SetupNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = spelled(Name(uint64(i)), NameNFD(uint64(i)))
	}
	return out
}

// Next makes page n; pages are made in order, each after the previous
// one was stored.
func (g *Pages) Next(n int) (Page, error) {
	rng := rand.New(rand.NewPCG(g.cfg.Seed, uint64(n)))
	pg := Page{N: n, Kind: g.cfg.Kinds[n%len(g.cfg.Kinds)]}
	size := g.cfg.MinSize + rng.IntN(g.cfg.MaxSize-g.cfg.MinSize+1)
	pg.IDs = make([]string, size)
	stored := (size*storedPct[pg.Kind] + 50) / 100
	labels := make([]bool, size) // the generator's own word: stored
	for k, i := range rng.Perm(size) {
		pg.IDs[i], labels[i] = g.id(rng, pg.Kind, k < stored)
	}
	pg.Want = g.Ref.Truth(pg.IDs)
	seen := map[string]bool{}
	for i, id := range pg.IDs {
		if pg.Want[i] == labels[i] {
			return Page{}, fmt.Errorf("page %d: the generator took %q for stored=%v, the reference says otherwise", n, id, labels[i])
		}
		if pg.Want[i] && !seen[id] {
			seen[id] = true
			pg.New = append(pg.New, id)
		}
	}
	return pg, nil
}

// id returns an id of the kind: stored (if there is one to draw) or new.
func (g *Pages) id(rng *rand.Rand, kind string, stored bool) (string, bool) {
	if kind == KindNames {
		if stored && len(g.names) > 0 {
			s := g.names[rng.IntN(len(g.names))]
			if rng.IntN(2) == 0 {
				s = otherForm(s)
			}
			return s, true
		}
		i := g.nextName
		g.nextName++
		return spelled(Name(i), NameNFD(i)), false
	}
	if pool := uint64(g.cfg.Rows) + uint64(len(g.inserted)); stored && pool > 0 {
		u := rng.Uint64N(pool)
		if u < uint64(g.cfg.Rows) {
			return RandomUUID.ID(u), true
		}
		return format(g.inserted[u-uint64(g.cfg.Rows)]), true
	}
	if kind == KindNewV7 {
		g.nextV7++
		return TimeOrdered.ID(g.nextV7 - 1), false
	}
	g.nextV4++
	return RandomUUID.ID(g.nextV4 - 1), false
}

// Stored records that the app stored the page's new ids.
func (g *Pages) Stored(pg Page) {
	for _, id := range pg.New {
		g.Ref.Add(id)
		if b, ok := parseUUID(id); ok {
			g.inserted = append(g.inserted, b)
		} else {
			g.names = append(g.names, id)
		}
	}
}

// Replay makes and stores pages 0..n-1 without asking anyone: the state
// a child process starting at page n inherits.
func (g *Pages) Replay(n int) error {
	for p := 0; p < n; p++ {
		pg, err := g.Next(p)
		if err != nil {
			return err
		}
		g.Stored(pg)
	}
	return nil
}

// SizeName names the page sizes: "10–1000", or "100" for a fixed size.
func (c PagesConfig) SizeName() string {
	if c.MinSize == c.MaxSize {
		return thousands(fmt.Sprint(c.MinSize))
	}
	return thousands(fmt.Sprint(c.MinSize)) + "–" + thousands(fmt.Sprint(c.MaxSize))
}

// kinds returns the kinds of the config, once each, in order.
func (c PagesConfig) kinds() []string {
	var out []string
	for _, k := range c.Kinds {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}
