package main

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// readMetrics parses a metrics file with Prometheus' own parser of the
// text exposition format (the one promtool and node_exporter's textfile
// collector use) and checks what a scrape needs: the header line first,
// one HELP and TYPE gauge per family, one sample each, no family twice.
func readMetrics(t *testing.T, path string) map[string]*dto.MetricFamily {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw, []byte(metricsHeader)) || !bytes.HasSuffix(raw, []byte("\n")) {
		t.Fatalf("metrics file does not start with the header or end with a newline:\n%s", raw)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("not the text exposition format: %v\n%s", err, raw)
	}
	for name, f := range fams {
		if f.GetHelp() == "" || f.GetType() != dto.MetricType_GAUGE || len(f.GetMetric()) != 1 || !strings.HasPrefix(name, "syncfilter_rebuild_") {
			t.Fatalf("family %s: help %q, type %v, %d samples", name, f.GetHelp(), f.GetType(), len(f.GetMetric()))
		}
		if strings.Count(string(raw), "# TYPE "+name+" ") != 1 {
			t.Fatalf("family %s declared twice", name)
		}
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o644 {
		t.Fatalf("metrics file mode %v (%v), want 0644 for node_exporter's user", info.Mode(), err)
	}
	return fams
}

func value(fams map[string]*dto.MetricFamily, name string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
	return f.GetMetric()[0].GetGauge().GetValue(), true
}

func reason(fams map[string]*dto.MetricFamily) string {
	f, ok := fams["syncfilter_rebuild_last_failure_reason"]
	if !ok {
		return ""
	}
	for _, l := range f.GetMetric()[0].GetLabel() {
		if l.GetName() == "reason" {
			return l.GetValue()
		}
	}
	return "(no reason label)"
}

// TestMetricsAcrossFailures: a failed run keeps the last success's time
// and figures (the alert on the success's age stays meaningful exactly
// when the job fails); a successful run keeps the last failure's time and
// reason; consecutive failures are counted.
func TestMetricsAcrossFailures(t *testing.T) {
	db := cronDB(t)
	dir := filepath.Dir(db)
	out, prom := filepath.Join(dir, "r.sfb"), filepath.Join(dir, "syncfilter.prom")
	ok := []string{"rebuild", "--db", db, "--table", "records", "--column", "id", "--out", out, "--metrics-file", prom}
	bad := []string{"rebuild", "--db", db, "--table", "nope", "--column", "id", "--out", out, "--metrics-file", prom}

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
	if got, _ := value(m2, "syncfilter_rebuild_bytes"); got != bytes1 || reason(m2) != reasonSource {
		t.Fatalf("after a failure: bytes %v (want %v), reason %q", got, bytes1, reason(m2))
	}
	failure1, has := value(m2, "syncfilter_rebuild_last_failure_timestamp_seconds")
	if !has || failure1 < success1 {
		t.Fatalf("last failure time %v, after the success at %v", failure1, success1)
	}

	// A second failure, of another kind: a lock held past --busy-timeout.
	lock := exclusiveLock(t, db)
	r := run(t, "", append(bad[:0:0], "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", out, "--metrics-file", prom, "--busy-timeout", "100ms")...)
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

// TestEveryMetricIsDocumented: the README names every metric the file
// can hold.
func TestEveryMetricIsDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range metricNames() {
		if !strings.Contains(string(readme), "`"+name+"`") {
			t.Errorf("README does not document %s", name)
		}
	}
	for _, r := range []string{reasonInterrupted, reasonLocked, reasonPath, reasonSource, reasonPermission, reasonMissing, reasonSQLite, reasonOther} {
		if !strings.Contains(string(readme), "`"+r+"`") {
			t.Errorf("README does not document the failure reason %s", r)
		}
	}
}
