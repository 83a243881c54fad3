package syncbench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMain runs a cold-start or real-loop child when the test binary is
// started as one (TestColdStart and the real-loop tests start it so, its
// flags in the environment: the testing package refuses flags it does
// not know).
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv("SYNCBENCH_TEST_REAL_CHILD"); ok {
		if err := RealChild(context.Background(), strings.Split(args, "\n")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if args, ok := os.LookupEnv("SYNCBENCH_TEST_CHILD"); ok {
		if err := ColdChild(context.Background(), strings.Split(args, "\n"), os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// useCache points CacheDir at a test directory.
func useCache(t *testing.T) {
	t.Setenv("SYNCBENCH_DIR", t.TempDir())
}

func TestShapes(t *testing.T) {
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-([47])[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	for _, s := range Shapes {
		t.Run(s.Name, func(t *testing.T) {
			seen := map[string]bool{}
			prev := ""
			for i := uint64(0); i < 100_000; i++ {
				id := s.ID(i)
				m := uuid.FindStringSubmatch(id)
				if m == nil {
					t.Fatalf("id %d = %q: not a UUID", i, id)
				}
				if want := map[string]string{"uuid": "4", "time": "7"}[s.Name]; m[1] != want {
					t.Fatalf("id %d = %q: version %s, want %s", i, id, m[1], want)
				}
				if seen[id] {
					t.Fatalf("id %d = %q repeats", i, id)
				}
				seen[id] = true
				if s.Name == "time" && id <= prev {
					t.Fatalf("id %d = %q sorts before id %d = %q", i, id, i-1, prev)
				}
				prev = id
			}
		})
	}
}

func TestLoopPages(t *testing.T) {
	useCache(t)
	ctx := context.Background()
	for _, s := range Shapes {
		l, err := OpenLoop(ctx, s, 2000, 100, 50)
		if err != nil {
			t.Fatal(err)
		}
		for p := 0; p < 6; p++ {
			if err := l.Page(ctx, p); err != nil {
				t.Fatal(err)
			}
			if err := l.Single(ctx, p, 1); err != nil {
				t.Fatal(err)
			}
		}
		st := l.Index().Stats()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if got, want := [3]int{len(l.Lib), len(l.InList), len(l.PerID)}, [3]int{6, 6, 6}; got != want {
			t.Errorf("%s: timings per side %v, want %v", s.Name, got, want)
		}
		var lib, sel int
		for _, k := range l.Singles {
			for _, pair := range k {
				lib, sel = lib+len(pair.Lib), sel+len(pair.Select)
			}
		}
		if lib != 6 || sel != 6 || len(l.Singles[Stored][AfterWrite].Lib)+len(l.Singles[New][AfterWrite].Lib) == 0 {
			t.Errorf("%s: single-id timings %+v: want 6 of each side, some after a write", s.Name, l.Singles)
		}
		// 6 pages of 50 new ids (and a few single ones) on a snapshot of
		// the base table: the filter caught up on the rows the app
		// stored, except those stored after its last call.
		if st.Generation < 5*50 || !st.Serving {
			t.Errorf("%s: stats %+v: want a serving filter that caught up on the app's rows", s.Name, st)
		}
	}
}

func TestInitialSync(t *testing.T) {
	useCache(t)
	res, err := InitialSync(context.Background(), InitialOptions{Pages: 12, PageSize: 200})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pages) != 12 {
		t.Fatalf("%d pages recorded, want 12", len(res.Pages))
	}
	for i, r := range res.Pages {
		if r.Page != i || r.RowsBefore != int64(i*200) || r.Missing <= 0 || r.InList <= 0 || r.Insert <= 0 {
			t.Errorf("page %d: %+v", i, r)
		}
		if !r.Bypass && (r.MeasuredFPR < 0 || r.MeasuredFPR > 1) {
			t.Errorf("page %d: measured rate %v", i, r.MeasuredFPR)
		}
	}
	if res.MissingTotal <= 0 || res.InListTotal <= 0 || res.HeapPeak < res.Pages[0].Heap/2 || res.FilterBytes <= 0 {
		t.Errorf("totals: %+v", res)
	}
	var csv, rep strings.Builder
	if err := res.WriteCSV(&csv); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(csv.String(), "\n"); n != 13 {
		t.Errorf("CSV has %d lines, want a header and 12 pages", n)
	}
	if err := res.Report(&rep); err != nil || !strings.Contains(rep.String(), "Missing total") {
		t.Errorf("report %q, %v", rep.String(), err)
	}
}

func TestBypassRuns(t *testing.T) {
	res := &InitialResult{TargetFPR: 0.01}
	for i, bypass := range []bool{false, true, true, false, true, true, true, false} {
		res.Pages = append(res.Pages, PageRecord{Page: i, Bypass: bypass, End: 10 * time.Duration(i+1)})
	}
	res.sum()
	if res.BypassPages != 5 || res.LongestBypass != 3 || res.LongestBypassTook != 30 {
		t.Errorf("bypass pages %d, longest run %d pages in %v; want 5, 3 in 30ns", res.BypassPages, res.LongestBypass, res.LongestBypassTook)
	}
}

func TestColdStart(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("DropCache is implemented for Linux only")
	}
	useCache(t)
	res, err := ColdStart(context.Background(), ColdOptions{
		Rows: 3000, Reps: 2, Modes: []string{ModeLib, ModeSQL, ModeLibNoSnap},
		Child: func(args ...string) *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "SYNCBENCH_TEST_CHILD="+strings.Join(args, "\n"))
			return cmd
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2*2*3 {
		t.Fatalf("%d runs, want 12", len(res.Runs))
	}
	for _, r := range res.Runs {
		if r.Report.Mode != r.Mode || r.Report.Missing != 500 || r.Report.Total <= r.Report.Main || r.Wall <= 0 {
			t.Errorf("run %+v", r)
		}
		if r.Mode == ModeLib && (!r.Report.Serving || r.Report.SnapshotError != "") {
			t.Errorf("the library child did not serve from its snapshot: %+v", r.Report)
		}
		if r.Cond == CondCold && r.Resident > 0.1 {
			t.Errorf("cold run started with %.0f%% of the pages cached", 100*r.Resident)
		}
	}
	modes := slices.Sorted(func(yield func(string) bool) {
		for k := range res.Medians() {
			if !yield(k[0] + "/" + k[1]) {
				return
			}
		}
	})
	if want := []string{"cold/lib", "cold/lib-nosnap", "cold/sql", "warm/lib", "warm/lib-nosnap", "warm/sql"}; !slices.Equal(modes, want) {
		t.Errorf("medians for %v, want %v", modes, want)
	}
}
