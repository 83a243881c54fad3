package syncbench

import (
	"strings"
	"testing"
)

func TestWriteTables(t *testing.T) {
	out := `goos: linux
BenchmarkSyncLoop/ids=uuid/page=1000/new=100%-2   100  70981359 ns/op  4058 inlist-us/page  1127 lib-us/page  0.2778 lib/inlist  0.07972 lib/perid  14144 perid-us/page  1666542 B/op  34119 allocs/op
--- BENCH: BenchmarkSyncLoop/ids=uuid/page=10000/new=50%-2
BenchmarkSyncLoop/ids=time/page=100/new=0%-2   300  2393233 ns/op  420.2 inlist-us/page  469.5 lib-us/page  1.117 lib/inlist  0.3564 lib/perid  1317 perid-us/page
BenchmarkSyncFetched/ids=uuid/store=1-2  3000  338163 ns/op  64.68 stored-fetched-us  19.03 stored-select-us  3.398 stored-ratio  1.1 stored-quiet-ratio  13.8 stored-quiet-fetched-us  4.2 stored-after-write-ratio  82.5 stored-after-write-fetched-us  0.6 new-fetched-us  9.1 new-select-us  0.066 new-ratio  0.07 new-quiet-ratio
PASS
`
	lines, err := ParseBench(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 || lines[0].Name != "BenchmarkSyncLoop/ids=uuid/page=1000/new=100%" || lines[0].Metrics["lib/inlist"] != 0.2778 {
		t.Fatalf("parsed %+v", lines)
	}
	var sb strings.Builder
	if err := WriteTables(&sb, lines); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| uuid | 1,000 | 100% | 1.13 ms | 4.06 ms | 14.14 ms | 0.28× | 0.080× | ≤ 0.2× | missed |",
		"| time | 100 | 0% | 470 µs | 420 µs | 1.32 ms | 1.12× | 0.356× | ≤ 1.0× | missed |",
		"| uuid | every 1 | stored | 65 µs | 19 µs | 3.40× | ≤ 1.1× | missed | 1.10× | 4.20× (82 µs) |",
		"| uuid | every 1 | new | 0.60 µs | 9.10 µs | 0.07× | ≤ 0.2× | met | 0.07× | – |",
	} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, sb.String())
		}
	}
	if err := WriteTables(&sb, nil); err == nil {
		t.Error("no lines: no error")
	}
}
