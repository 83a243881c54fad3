package syncbench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAblationNeedsTheTag: without -tags syncfilter_ablate, a child asked
// to switch a mechanism off fails rather than measure the library whole,
// and the ablation refuses to start.
func TestAblationNeedsTheTag(t *testing.T) {
	if AblateBuild {
		t.Skip("built with syncfilter_ablate")
	}
	useCache(t)
	cfg := tinyConfig()
	cfg.Ablate = "lookup"
	_, err := testRunner().Run(context.Background(), "mixed", cfg)
	if err == nil || !strings.Contains(err.Error(), "built without -tags syncfilter_ablate") {
		t.Errorf("child asked to switch lookup off in a build without the tag: %v", err)
	}
	if _, err := testRunner().Ablation(context.Background(), "mixed", []RealConfig{tinyConfig()}, []string{"lookup"}); err == nil {
		t.Error("ablation without the tag: no error")
	}
}

// TestAblationTiny runs the ablation of two mechanisms on tiny runs
// (go test -tags syncfilter_ablate).
func TestAblationTiny(t *testing.T) {
	if !AblateBuild {
		t.Skip("needs -tags syncfilter_ablate")
	}
	useCache(t)
	rr := testRunner()
	if _, err := rr.Ablation(context.Background(), "mixed", []RealConfig{tinyConfig()}, []string{"no-such"}); err == nil {
		t.Error("an unknown mechanism: no error")
	}
	rows, err := rr.Ablation(context.Background(), "mixed", []RealConfig{tinyConfig()}, []string{"lookup", "follower"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0].Off != "" || rows[1].Off != "lookup" || rows[2].Off != "follower" {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		for _, tw := range r.Twins {
			for _, c := range []*RealCell{tw.Lib, tw.InList} {
				for _, ch := range c.Children {
					if ch.Ablated != r.Off {
						t.Errorf("row %q: a child switched off %q", r.Off, ch.Ablated)
					}
				}
			}
		}
	}
	var b strings.Builder
	if err := WriteAblationTables(&b, rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| none |", "| lookup |", "| follower |", "after the 12-step rebuild |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, b.String())
		}
	}
}

// TestAblationMechanismsKnown: the library of an ablation build knows every
// mechanism the harness names (it panics on one it does not).
func TestAblationMechanismsKnown(t *testing.T) {
	if !AblateBuild {
		t.Skip("needs -tags syncfilter_ablate")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "app.db")
	if err := EmptyDB(ctx, path); err != nil {
		t.Fatal(err)
	}
	for _, m := range Mechanisms {
		t.Setenv(EnvAblate, m)
		lib, err := OpenLib(ctx, DefaultDriver(), path, "", nil)
		if err != nil {
			t.Fatalf("%s off: %v", m, err)
		}
		if err := lib.Close(ctx); err != nil {
			t.Fatalf("%s off: %v", m, err)
		}
	}
}

// TestWriteAblationTables checks the cells and the wins on made-up twins:
// with a mechanism off the library takes twice as long on every page.
func TestWriteAblationTables(t *testing.T) {
	twins := func(lib time.Duration) *RealTwins {
		var pages []RealPage
		for n := range 40 {
			pages = append(pages, RealPage{Page: n, Kind: MixedKinds[n%4], Size: 10, Lib: lib, InList: time.Millisecond})
		}
		for i, m := range ablationMarks {
			pages[5+5*i].Mark = m
		}
		cell := &RealCell{Children: []RealChildReport{{Pages: pages}}}
		return &RealTwins{Variant: "mixed", Config: RealConfig{Wait: WaitSpec{}}, Lib: cell, InList: cell}
	}
	rows := []AblationRow{{Off: "", Twins: []*RealTwins{twins(500 * time.Microsecond)}}, {Off: "lookup", Twins: []*RealTwins{twins(time.Millisecond)}}}
	var b strings.Builder
	if err := WriteAblationTables(&b, rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| none |" + strings.Repeat(" 0.50× |", 10),
		"| lookup |" + strings.Repeat(" 1.00× |", 10),
		"| lookup |" + strings.Repeat(" 2.00× |", 10),
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, b.String())
		}
	}
	if err := WriteAblationTables(&b, rows[1:]); err == nil {
		t.Error("no row with nothing off: no error")
	}
}
