package main

import (
	"bufio"
	"bytes"
	"database/sql"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// family is one metric family of a metrics file, as the text exposition
// format (version 0.0.4, what node_exporter's textfile collector and
// promtool read) defines it.
type family struct {
	help, typ string
	samples   []sample
}

type sample struct {
	labels map[string]string
	value  float64
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// parseExposition reads the text exposition format strictly: HELP and TYPE
// at most once per family and before its samples, a family's samples
// together, valid metric and label names, escaped label values (\\, \",
// \n only), a float value (NaN, +Inf, -Inf allowed) and an optional
// integer timestamp, every line ending in a newline.
func parseExposition(raw []byte) (map[string]*family, error) {
	fams := map[string]*family{}
	var last string // the family whose samples came last
	done := map[string]bool{}
	get := func(name string) *family {
		f := fams[name]
		if f == nil {
			f = &family{}
			fams[name] = f
		}
		return f
	}
	if len(raw) > 0 && raw[len(raw)-1] != '\n' {
		return nil, fmt.Errorf("no newline at the end")
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		bad := func(why string) error { return fmt.Errorf("line %d %q: %s", n, line, why) }
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "# HELP ") || strings.HasPrefix(line, "# TYPE "):
			fields := strings.SplitN(line[7:], " ", 2)
			if len(fields) != 2 || !metricName.MatchString(fields[0]) {
				return nil, bad("malformed")
			}
			f := get(fields[0])
			if len(f.samples) > 0 {
				return nil, bad("after the family's samples")
			}
			if line[2] == 'H' {
				if f.help != "" {
					return nil, bad("second HELP")
				}
				f.help = fields[1]
			} else {
				if f.typ != "" {
					return nil, bad("second TYPE")
				}
				switch fields[1] {
				case "counter", "gauge", "histogram", "summary", "untyped":
				default:
					return nil, bad("unknown type")
				}
				f.typ = fields[1]
			}
			continue
		case strings.HasPrefix(line, "#"):
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if !metricName.MatchString(name) {
			return nil, bad("bad metric name")
		}
		s := sample{labels: map[string]string{}}
		if strings.HasPrefix(rest, "{") {
			rest = rest[1:]
			for !strings.HasPrefix(rest, "}") {
				eq := strings.Index(rest, "=\"")
				if eq < 0 || !labelName.MatchString(rest[:eq]) {
					return nil, bad("bad label")
				}
				lname := rest[:eq]
				rest = rest[eq+2:]
				var v strings.Builder
				for {
					if rest == "" {
						return nil, bad("unterminated label value")
					}
					c := rest[0]
					rest = rest[1:]
					if c == '"' {
						break
					}
					if c == '\\' {
						if rest == "" {
							return nil, bad("dangling escape")
						}
						switch rest[0] {
						case '\\', '"':
							v.WriteByte(rest[0])
						case 'n':
							v.WriteByte('\n')
						default:
							return nil, bad("bad escape")
						}
						rest = rest[1:]
						continue
					}
					v.WriteByte(c)
				}
				if _, dup := s.labels[lname]; dup {
					return nil, bad("label twice")
				}
				s.labels[lname] = v.String()
				rest = strings.TrimPrefix(rest, ",")
			}
			rest = rest[1:]
		}
		fields := strings.Fields(rest)
		if !strings.HasPrefix(rest, " ") || len(fields) < 1 || len(fields) > 2 {
			return nil, bad("want a value and an optional timestamp")
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil && !(fields[0] == "NaN" || fields[0] == "+Inf" || fields[0] == "-Inf") {
			return nil, bad("bad value")
		}
		if fields[0] == "NaN" {
			v = math.NaN()
		}
		if len(fields) == 2 {
			if _, err := strconv.ParseInt(fields[1], 10, 64); err != nil {
				return nil, bad("bad timestamp")
			}
		}
		s.value = v
		if name != last && done[name] {
			return nil, bad("a family's samples apart")
		}
		if last != "" && last != name {
			done[last] = true
		}
		last = name
		f := get(name)
		f.samples = append(f.samples, s)
	}
	return fams, sc.Err()
}

// readMetrics parses a metrics file by the exposition format's rules and
// checks what a scrape needs: the header line first, one HELP and TYPE
// gauge per family, one sample each.
func readMetrics(t *testing.T, path string) map[string]*family {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw, []byte(metricsHeader)) {
		t.Fatalf("metrics file does not start with the header:\n%s", raw)
	}
	fams, err := parseExposition(raw)
	if err != nil {
		t.Fatalf("not the text exposition format: %v\n%s", err, raw)
	}
	for name, f := range fams {
		if f.help == "" || f.typ != "gauge" || len(f.samples) != 1 || !strings.HasPrefix(name, "syncfilter_rebuild_") {
			t.Fatalf("family %s: help %q, type %q, %d samples", name, f.help, f.typ, len(f.samples))
		}
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o644 {
		t.Fatalf("metrics file mode %v (%v), want 0644 for node_exporter's user", info.Mode(), err)
	}
	return fams
}

// TestParseExpositionRefuses: the parser the metrics tests rely on refuses
// what a scraper refuses.
func TestParseExpositionRefuses(t *testing.T) {
	t.Parallel()
	good := "# HELP a_b doc\n# TYPE a_b gauge\na_b{reason=\"x\\\"y\"} 1.5\nc 2 1700000000\n"
	if _, err := parseExposition([]byte(good)); err != nil {
		t.Fatalf("valid input refused: %v", err)
	}
	for _, in := range []string{
		"a-b 1\n", "a 1", "a x\n", "a{1b=\"v\"} 1\n", "a{b=\"v} 1\n", "a{b=\"\\q\"} 1\n",
		"# TYPE a gauge\n# TYPE a gauge\na 1\n", "a 1\n# HELP a late\n", "# TYPE a widget\na 1\n",
		"a 1\nb 2\na 3\n", "a 1 2 3\n", "a{b=\"v\",b=\"w\"} 1\n",
	} {
		if _, err := parseExposition([]byte(in)); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func value(fams map[string]*family, name string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
	return f.samples[0].value, true
}

func reason(fams map[string]*family) string {
	f, ok := fams["syncfilter_rebuild_last_failure_reason"]
	if !ok {
		return ""
	}
	if r, ok := f.samples[0].labels["reason"]; ok {
		return r
	}
	return "(no reason label)"
}

// TestMetricsAcrossFailures: a failed run keeps the last success's time
// and figures (the alert on the success's age stays meaningful exactly
// when the job fails); a successful run keeps the last failure's time and
// reason; consecutive failures are counted. Every series is the source's,
// labelled table and column.
func TestMetricsAcrossFailures(t *testing.T) {
	t.Parallel()
	db := cronDB(t)
	dir := filepath.Dir(db)
	out, prom := filepath.Join(dir, "r.sfb"), filepath.Join(dir, "syncfilter.prom")
	notes := filepath.Join(dir, "notes.txt") // the app's file: the run refuses to replace it
	if err := os.WriteFile(notes, []byte("the app's notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := []string{"rebuild", "--db", db, "--table", "records", "--column", "id", "--out", out, "--metrics-file", prom}
	bad := []string{"rebuild", "--db", db, "--table", "records", "--column", "id", "--out", notes, "--metrics-file", prom}

	run(t, "", ok...).must(t, 0)
	m1 := readMetrics(t, prom)
	success1, has := value(m1, "syncfilter_rebuild_last_success_timestamp_seconds")
	if !has {
		t.Fatal("no last success time after a success")
	}
	for name, want := range map[string]float64{"syncfilter_rebuild_last_run_success": 1, "syncfilter_rebuild_consecutive_failures": 0,
		"syncfilter_rebuild_rows": 1005, "syncfilter_rebuild_keys": 1003, "syncfilter_rebuild_skipped_rows": 2} {
		if got, _ := value(m1, name); got != want {
			t.Fatalf("%s = %v, want %v", name, got, want)
		}
	}
	if _, has := value(m1, "syncfilter_rebuild_last_failure_timestamp_seconds"); has || reason(m1) != "" {
		t.Fatal("failure metrics before any failure")
	}

	run(t, "", bad...).must(t, 1)
	m2 := readMetrics(t, prom)
	for name, want := range map[string]float64{
		"syncfilter_rebuild_last_success_timestamp_seconds": success1, "syncfilter_rebuild_rows": 1005, "syncfilter_rebuild_keys": 1003,
		"syncfilter_rebuild_last_run_success": 0, "syncfilter_rebuild_consecutive_failures": 1,
	} {
		if got, has := value(m2, name); !has || got != want {
			t.Fatalf("after a failure: %s = %v (%v), want %v", name, got, has, want)
		}
	}
	bytes1, _ := value(m1, "syncfilter_rebuild_bytes")
	if got, _ := value(m2, "syncfilter_rebuild_bytes"); got != bytes1 || reason(m2) != reasonPath {
		t.Fatalf("after a failure: bytes %v (want %v), reason %q", got, bytes1, reason(m2))
	}
	failure1, has := value(m2, "syncfilter_rebuild_last_failure_timestamp_seconds")
	if !has || failure1 < success1 {
		t.Fatalf("last failure time %v, after the success at %v", failure1, success1)
	}

	// A second failure, of another kind: a lock held past --busy-timeout.
	lock := exclusiveLock(t, db)
	r := run(t, "", append([]string(nil), "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", out, "--metrics-file", prom, "--busy-timeout", "100ms")...)
	lock()
	m3 := readMetrics(t, prom)
	if got, _ := value(m3, "syncfilter_rebuild_consecutive_failures"); r.code != 1 || got != 2 || reason(m3) != reasonLocked {
		t.Fatalf("locked run: exit %d, consecutive failures %v, reason %q: %s", r.code, got, reason(m3), r.stderr)
	}

	run(t, "", ok...).must(t, 0)
	m4 := readMetrics(t, prom)
	success2, _ := value(m4, "syncfilter_rebuild_last_success_timestamp_seconds")
	failure2, _ := value(m4, "syncfilter_rebuild_last_failure_timestamp_seconds")
	if success2 < failure2 || failure2 < failure1 || reason(m4) != reasonLocked {
		t.Fatalf("after the next success: success %v, failure %v (was %v), reason %q", success2, failure2, failure1, reason(m4))
	}
	if got, _ := value(m4, "syncfilter_rebuild_consecutive_failures"); got != 0 {
		t.Fatalf("consecutive failures %v after a success", got)
	}
	for _, name := range metricNames() {
		if _, has := m4[name]; !has {
			t.Errorf("%s missing after a success following failures", name)
		}
	}
}

// exclusiveLock begins an exclusive transaction on the database, as an
// app in the middle of a write would hold it (in rollback-journal mode no
// reader gets in either; in WAL mode no other writer), until the returned
// function is called.
func exclusiveLock(t *testing.T, path string) func() {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000&_txlock=exclusive")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO records (id) VALUES ('held-by-the-app')`); err != nil {
		t.Fatal(err)
	}
	return func() { _ = tx.Rollback(); _ = db.Close() }
}

// TestEveryMetricIsDocumented: docs/OPERATIONS.md names every metric the
// file can hold, and every failure reason.
func TestEveryMetricIsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range metricNames() {
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/OPERATIONS.md does not document %s", name)
		}
	}
	for _, r := range []string{reasonInterrupted, reasonLocked, reasonPath, reasonSource, reasonPermission, reasonMissing, reasonSQLite, reasonOther} {
		if !strings.Contains(string(doc), "`"+r+"`") {
			t.Errorf("docs/OPERATIONS.md does not document the failure reason %s", r)
		}
	}
}

// TestMetricsSeriesPerSource: single-source runs sharing a metrics file
// keep each other's series, and a source's failure keeps its last
// success.
func TestMetricsSeriesPerSource(t *testing.T) {
	t.Parallel()
	db := cronDB(t)
	dir := filepath.Dir(db)
	prom := filepath.Join(dir, "syncfilter.prom")
	run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", filepath.Join(dir, "r.sfb"), "--metrics-file", prom).must(t, 0)
	m := seriesOf(t, prom)
	success, rows := m["syncfilter_rebuild_last_success_timestamp_seconds"]["records.id"].value, m["syncfilter_rebuild_rows"]["records.id"].value
	if success == 0 || rows == 0 {
		t.Fatalf("after a success of records: %+v", m)
	}
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("the app's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A failure of records keeps its last success.
	run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", notes, "--metrics-file", prom).must(t, 1)
	m = seriesOf(t, prom)
	if s := m["syncfilter_rebuild_last_success_timestamp_seconds"]["records.id"]; s.value != success || m["syncfilter_rebuild_rows"]["records.id"].value != rows {
		t.Fatalf("records' last success was not kept after its failure: %+v", m)
	}
	// Another source's run keeps records' series.
	run(t, "", "rebuild", "--db", db, "--table", "loose", "--column", "id", "--out", filepath.Join(dir, "l.sfb"), "--metrics-file", prom).must(t, 0)
	m = seriesOf(t, prom)
	if len(m["syncfilter_rebuild_last_run_success"]) != 2 || m["syncfilter_rebuild_last_run_success"]["records.id"].value != 0 ||
		m["syncfilter_rebuild_last_run_success"]["loose.id"].value != 1 || m["syncfilter_rebuild_last_failure_reason"]["records.id"].labels["reason"] != reasonPath {
		t.Fatalf("two sources in one file: %+v", m)
	}
}
