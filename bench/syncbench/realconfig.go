package syncbench

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// RealConfig is one run of the real loop: the table, the pages, the wait
// standing for the network, and the events in the middle. A run's child
// processes all read the same config.
type RealConfig struct {
	PagesConfig
	Driver       string
	DB, Snapshot string // the run's copy of the app's database and its snapshot
	Pages        int
	Wait         WaitSpec // the network: the records' fetch, then the next page of ids
	// After is the share of each page's wait spent after the app's
	// INSERTs (the next page of ids on its way); the rest comes before
	// them (the records' fetch). 0: the INSERTs come right before the
	// next page's call, the hardest case for catching up between calls.
	After float64
	// LibFirst: the library answers every page first, right after the
	// app's commit, and the IN-list second; else the other way round.
	// A run and its order-flipped twin (RealRunner.Twins) time each side
	// first.
	LibFirst bool
	// StoredOnly: the IN-list side binds only the page's ids it finds
	// stored (the page's first id when none is): what the app's IN-list
	// pays for the stored ids alone, a reference point for the library's
	// time (not a bound: the library's statement costs less per id on big
	// pages), not an alternative an app can write (it would have to know
	// the answers).
	StoredOnly bool
	// Ablate lists the library's speed mechanisms the children switch off
	// (EnvAblate; a binary built with -tags syncfilter_ablate).
	Ablate string
	// The events, each before the page of that number (-1: none).
	AddColumnAt, RebuildAt int
	// Unattached: no snapshot is built, and the library never attached
	// the table: the run's first page is the first on a table of Rows
	// rows (and Names) it never saw, its attach and scan behind it.
	Unattached bool
	// RestartAt: the process that answered the pages before it closes;
	// a new one answers CrashPages pages and exits without Close; the
	// rest of the run is a third process (-1: one process).
	RestartAt, CrashPages int
}

// Baseline names the IN-list side: "in-list", or "stored-only".
func (c RealConfig) Baseline() string {
	if c.StoredOnly {
		return "stored-only"
	}
	return "in-list"
}

// ParseAfters reads a comma-separated list of RealConfig.After shares.
func ParseAfters(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		a, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || a < 0 || a > 1 {
			return nil, fmt.Errorf("after %q: want a share from 0 to 1", f)
		}
		out = append(out, a)
	}
	return out, nil
}

// ParseSizes reads a comma-separated list of page sizes ("" for none).
func ParseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("page size %q: want a positive count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// WaitSpec is a wait drawn uniformly from [Min, Max], seeded by the page.
type WaitSpec struct{ Min, Max time.Duration }

// ParseWait reads "0", "5ms" or "20ms-50ms".
func ParseWait(s string) (WaitSpec, error) {
	lo, hi, ranged := strings.Cut(s, "-")
	a, err := time.ParseDuration(lo)
	if err != nil {
		return WaitSpec{}, fmt.Errorf("wait %q: %w", s, err)
	}
	b := a
	if ranged {
		if b, err = time.ParseDuration(hi); err != nil {
			return WaitSpec{}, fmt.Errorf("wait %q: %w", s, err)
		}
	}
	if a < 0 || b < a {
		return WaitSpec{}, fmt.Errorf("wait %q: want 0 ≤ min ≤ max", s)
	}
	return WaitSpec{a, b}, nil
}

// ParseWaits reads a comma-separated list of waits.
func ParseWaits(s string) ([]WaitSpec, error) {
	var out []WaitSpec
	for _, f := range strings.Split(s, ",") {
		w, err := ParseWait(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

func (w WaitSpec) String() string {
	if w.Max == 0 {
		return "0"
	}
	if w.Min == w.Max {
		return w.Min.String()
	}
	return w.Min.String() + "–" + w.Max.String()
}

// For returns page n's wait.
func (w WaitSpec) For(seed uint64, n int) time.Duration {
	if w.Max == w.Min {
		return w.Min
	}
	rng := rand.New(rand.NewPCG(seed^0x77616974, uint64(n)))
	return w.Min + time.Duration(rng.Int64N(int64(w.Max-w.Min)+1))
}

// Segment is the part of a run one child process answers.
type Segment struct {
	From, To int    // pages
	Abandon  bool   // exit without Close after the last page
	Mark     string // what the first page of the process is
}

// Marks of special pages: the first page of a process, the first after
// an event.
const (
	MarkFresh        = "first page of a fresh process (snapshot from BuildSnapshot)"
	MarkFreshClosed  = "first page of a fresh process (after a Close)"
	MarkAfterAbandon = "first page after a restart without Close"
	MarkAddColumn    = "first page after ALTER TABLE ADD COLUMN"
	MarkRebuild      = "first page after the 12-step table rebuild"
	MarkNoSnapshot   = "first page of a fresh process (no snapshot yet)"
	MarkUnattached   = "first page of a fresh process (a table never attached)"
)

// Segments returns the child processes of the run, in order.
func (c RealConfig) Segments() []Segment {
	first := MarkFresh
	switch {
	case c.Rows == 0:
		first = MarkNoSnapshot
	case c.Unattached:
		first = MarkUnattached
	}
	r := c.RestartAt
	if r <= 0 || r >= c.Pages || c.CrashPages < 1 {
		return []Segment{{From: 0, To: c.Pages, Mark: first}}
	}
	k := min(r+c.CrashPages, c.Pages)
	segs := []Segment{{From: 0, To: r, Mark: first}, {From: r, To: k, Abandon: true, Mark: MarkFreshClosed}}
	if k < c.Pages {
		segs = append(segs, Segment{From: k, To: c.Pages, Mark: MarkAfterAbandon})
	}
	return segs
}
