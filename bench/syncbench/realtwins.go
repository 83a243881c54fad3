package syncbench

import (
	"context"
	"fmt"
	"time"
)

// RealTwins is a run config run twice with the same seed: once with the
// library first on every page, once with the IN-list first. The first
// read after another connection's commit reloads the reader's page
// cache, so each side is timed in the twin where it ran first.
type RealTwins struct {
	Variant string
	Config  RealConfig // as run, LibFirst aside
	Lib     *RealCell  // the twin where the library ran first
	InList  *RealCell  // the twin where the IN-list ran first
}

// Twins runs cfg with the library first, then with the IN-list first,
// and checks that both saw the same pages.
func (rr RealRunner) Twins(ctx context.Context, variant string, cfg RealConfig) (*RealTwins, error) {
	t := &RealTwins{Variant: variant, Config: cfg}
	var err error
	cfg.LibFirst = true
	if t.Lib, err = rr.Run(ctx, variant, cfg); err != nil {
		return nil, err
	}
	cfg.LibFirst = false
	if t.InList, err = rr.Run(ctx, variant, cfg); err != nil {
		return nil, err
	}
	return t, t.Check()
}

// Check reports an error if the twins did not see the same pages (ids,
// sizes, kinds, new ids, marks) page by page.
func (t *RealTwins) Check() error {
	a, b := t.Lib.Pages(), t.InList.Pages()
	if len(a) != len(b) {
		return fmt.Errorf("twins of %s: %d and %d pages", t.name(), len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Page != y.Page || x.Kind != y.Kind || x.Size != y.Size || x.New != y.New || x.Digest != y.Digest ||
			x.Mark != y.Mark || x.InListBlind != y.InListBlind || x.InListIDs != y.InListIDs {
			return fmt.Errorf("TWINS DIFFER: %s at position %d: the library-first twin saw page %d (%s, %d ids, %d new, digest %x, %q), the IN-list-first twin page %d (%s, %d ids, %d new, digest %x, %q)",
				t.name(), i, x.Page, x.Kind, x.Size, x.New, x.Digest, x.Mark, y.Page, y.Kind, y.Size, y.New, y.Digest, y.Mark)
		}
	}
	return nil
}

func (t *RealTwins) name() string {
	return fmt.Sprintf("%s, %s ids, wait %v, after %v", t.Variant, t.Config.SizeName(), t.Config.Wait, t.Config.After)
}

// PairedPage is one page of twins: each side's call from the twin where
// it ran first, and from the one where it ran second.
type PairedPage struct {
	Page        int
	Kind        string
	Size, New   int
	Mark        string
	InListBlind int
	InListIDs   int           // the ids the IN-list side bound
	Lib, InList time.Duration // each first after the app's commit
	// LibSecond and InListSecond ran second, after the other side.
	LibSecond, InListSecond time.Duration
	LibAllocs, InListAllocs uint64 // in the twin where the side ran first
	Bypass                  uint64 // the library-first twin's
}

// Ratio returns the page's library ÷ IN-list, each first after the commit.
func (p PairedPage) Ratio() float64 { return Ratio(p.Lib, p.InList) }

// Pages pairs the twins' pages by page number (Check first).
func (t *RealTwins) Pages() []PairedPage {
	a, b := t.Lib.Pages(), t.InList.Pages()
	out := make([]PairedPage, min(len(a), len(b)))
	for i := range out {
		x, y := a[i], b[i]
		out[i] = PairedPage{Page: x.Page, Kind: x.Kind, Size: x.Size, New: x.New, Mark: x.Mark, InListBlind: x.InListBlind, InListIDs: y.InListIDs,
			Lib: x.Lib, InList: y.InList, LibSecond: y.Lib, InListSecond: x.InList,
			LibAllocs: x.LibAllocs, InListAllocs: y.InListAllocs, Bypass: x.Bypass}
	}
	return out
}
