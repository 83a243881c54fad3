package syncbench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// BenchLine is one result line of `go test -bench`: the benchmark's name
// (without the -GOMAXPROCS suffix) and its metrics by unit.
type BenchLine struct {
	Name    string
	Metrics map[string]float64
}

var benchName = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?$`)

// ParseBench reads the result lines of `go test -bench` output, skipping
// every other line.
func ParseBench(r io.Reader) ([]BenchLine, error) {
	var out []BenchLine
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || len(f)%2 != 0 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		m := benchName.FindStringSubmatch(f[0])
		if m == nil {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // not a result line
		}
		l := BenchLine{Name: m[1], Metrics: map[string]float64{}}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("parse %s: metric %q: %w", f[0], f[i], err)
			}
			l.Metrics[f[i+1]] = v
		}
		out = append(out, l)
	}
	return out, sc.Err()
}

var loopName = regexp.MustCompile(`^BenchmarkSyncLoop/ids=(\w+)/page=(\d+)/new=(\d+)%$`)
var fetchedName = regexp.MustCompile(`^BenchmarkSyncFetched/ids=(\w+)/store=(\d+)$`)

// loopTarget returns the target for the library ÷ IN-list ratio of a
// sync-loop cell (the "target" column of docs/BENCHMARKS.md), "" where
// there is none.
func loopTarget(ids, newPct string) (string, float64) {
	switch {
	case newPct == "0":
		return "≤ 1.0×", 1.0
	case newPct == "100" && ids == "uuid":
		return "≤ 0.2×", 0.2
	case newPct == "100" && ids == "time":
		return "≤ 0.3×", 0.3
	}
	return "", 0
}

// WriteTables writes the sync-loop and single-id results of lines as the
// Markdown tables of docs/BENCHMARKS.md.
func WriteTables(w io.Writer, lines []BenchLine) error {
	var errs []error
	p := func(format string, args ...any) {
		_, err := fmt.Fprintf(w, format+"\n", args...)
		errs = append(errs, err)
	}
	verdict := func(ratio, limit float64) string {
		if limit == 0 {
			return ""
		}
		if ratio <= limit {
			return "met"
		}
		return "missed"
	}
	header := false
	for _, l := range lines {
		m := loopName.FindStringSubmatch(l.Name)
		if m == nil {
			continue
		}
		if !header {
			p("| ids | page | new | library | IN-list | SELECT per id | library ÷ IN-list | library ÷ per id | target ÷ IN-list | |")
			p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
			header = true
		}
		x := l.Metrics
		target, limit := loopTarget(m[1], m[3])
		p("| %s | %s | %s%% | %s | %s | %s | %.2f× | %.3f× | %s | %s |", m[1], thousands(m[2]), m[3],
			micros(x["lib-us/page"]), micros(x["inlist-us/page"]), micros(x["perid-us/page"]),
			x["lib/inlist"], x["lib/perid"], target, verdict(x["lib/inlist"], limit))
	}
	header = false
	for _, l := range lines {
		m := fetchedName.FindStringSubmatch(l.Name)
		if m == nil {
			continue
		}
		if !header {
			if len(errs) > 0 {
				p("")
			}
			p("| ids | app stores | id | Fetched | prepared SELECT | ratio | target | | ratio, no commit since the last call | ratio, first call after a commit (Fetched) |")
			p("|---|---|---|---:|---:|---:|---:|---|---:|---:|")
			header = true
		}
		x := l.Metrics
		for _, k := range []struct {
			kind, target string
			limit        float64
		}{{"stored", "≤ 1.1×", 1.1}, {"new", "≤ 0.2×", 0.2}} {
			r := x[k.kind+"-ratio"]
			after := "–"
			if v, ok := x[k.kind+"-after-write-ratio"]; ok {
				after = fmt.Sprintf("%.2f× (%s)", v, micros(x[k.kind+"-after-write-fetched-us"]))
			}
			p("| %s | every %s | %s | %s | %s | %.2f× | %s | %s | %.2f× | %s |", m[1], m[2], k.kind,
				micros(x[k.kind+"-fetched-us"]), micros(x[k.kind+"-select-us"]), r, k.target, verdict(r, k.limit),
				x[k.kind+"-quiet-ratio"], after)
		}
	}
	if !header && len(errs) == 0 {
		return errors.New("write tables: no BenchmarkSyncLoop or BenchmarkSyncFetched lines")
	}
	return errors.Join(errs...)
}

// micros formats microseconds for a table: µs below 1,000, else ms.
func micros(us float64) string {
	switch {
	case us >= 1000:
		return strconv.FormatFloat(us/1000, 'f', 2, 64) + " ms"
	case us >= 10:
		return strconv.FormatFloat(us, 'f', 0, 64) + " µs"
	default:
		return strconv.FormatFloat(us, 'f', 2, 64) + " µs"
	}
}

// thousands writes a decimal integer with thousands separators.
func thousands(s string) string {
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
