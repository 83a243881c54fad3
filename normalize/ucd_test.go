package normalize_test

import (
	"bufio"
	"compress/bzip2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/syncfilter/syncfilter/normalize"
)

// TestUnicodeConformance runs the NFC column of the Unicode Character
// Database's NormalizationTest.txt (15.0.0, Debian's unicode-data package;
// SYNCFILTER_UCD names another directory): for each line c1..c5,
// c2 = c(c1) = c(c2) = c(c3) and c4 = c(c4) = c(c5). Skipped when the
// file is not installed, unless SYNCFILTER_REQUIRE_UCD is set (make test).
func TestUnicodeConformance(t *testing.T) {
	dir := os.Getenv("SYNCFILTER_UCD")
	if dir == "" {
		dir = "/usr/share/unicode"
	}
	f, err := os.Open(filepath.Join(dir, "NormalizationTest.txt.bz2"))
	if err != nil {
		if os.Getenv("SYNCFILTER_REQUIRE_UCD") != "" {
			t.Fatalf("%v (Debian: apt-get install unicode-data)", err)
		}
		t.Skipf("%v (Debian: apt-get install unicode-data)", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(bzip2.NewReader(f))
	lines := 0
	for sc.Scan() {
		line := sc.Text()
		if lines == 0 && !strings.Contains(line, "NormalizationTest-"+normalize.PinnedUnicode+".txt") {
			t.Fatalf("NormalizationTest.txt is not of Unicode %s: %q", normalize.PinnedUnicode, line)
		}
		if line, _, _ = strings.Cut(line, "#"); line == "" || line[0] == '@' {
			lines++
			continue
		}
		lines++
		var c [5]string
		for i, field := range strings.SplitN(line, ";", 6)[:5] {
			var sb strings.Builder
			for _, hex := range strings.Fields(field) {
				r, err := strconv.ParseUint(hex, 16, 32)
				if err != nil {
					t.Fatalf("line %d: %v", lines, err)
				}
				sb.WriteRune(rune(r))
			}
			c[i] = sb.String()
		}
		for i, want := range []int{1, 1, 1, 3, 3} {
			if got, err := normalize.String(c[i]); err != nil || got != c[want] {
				t.Fatalf("line %d: c(c%d %+q) = %+q, %v; want c%d %+q", lines, i+1, c[i], got, err, want+1, c[want])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if lines < 19_000 {
		t.Fatalf("only %d lines", lines)
	}
}
