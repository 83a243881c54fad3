package main

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/zeebo/blake3"
	"golang.org/x/sys/unix"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := run(t, "", args...).must(t, 0)
		for _, want := range []string{"syncfilter ", "module", "github.com/syncfilter/syncfilter", "go1.", "reads format [1 2]", "writes format 2", "nfc/1", "Unicode 15.0.0", "sqlite         3."} {
			if !strings.Contains(r.stdout, want) {
				t.Fatalf("%v: %q lacks %q", args, r.stdout, want)
			}
		}
	}
	var v versionInfo
	r := run(t, "", "version", "--json").must(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.SQLite == "" || v.Go == "" || v.FormatWritten != 2 {
		t.Fatalf("version --json: %q, %v", r.stdout, err)
	}
}

func TestHelpAndUsageStreams(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"help", "rebuild"}, {"rebuild", "--help"}} {
		r := run(t, "", args...).must(t, 0)
		if r.stdout == "" || r.stderr != "" {
			t.Fatalf("%v: help must go to stdout: stdout %q, stderr %q", args, r.stdout, r.stderr)
		}
	}
	r := run(t, "", "help", "rebuild").must(t, 0)
	if !strings.Contains(r.stdout, "Examples:") || !strings.Contains(r.stdout, "  --db path") || regexp.MustCompile(`(?m)^  -db`).MatchString(r.stdout) {
		t.Fatalf("rebuild help: %q", r.stdout)
	}
	r = run(t, "", "rebuild")
	if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "flags --db, --table, --column, --out are required") {
		t.Fatalf("bare rebuild: exit %d, %q", r.code, r.stderr)
	}
	r = run(t, "", "rebiuld")
	if r.code != 2 || !strings.Contains(r.stderr, `did you mean "rebuild"`) {
		t.Fatalf("rebiuld: exit %d, %q", r.code, r.stderr)
	}
	r = run(t, "", "rebuild", "--dbb", "x")
	if r.code != 2 || !strings.Contains(r.stderr, "did you mean --db") {
		t.Fatalf("--dbb: exit %d, %q", r.code, r.stderr)
	}
}

func TestStrictNumbersAndInstantLimits(t *testing.T) {
	t.Parallel()
	db := appDB(t, 10)
	out := filepath.Join(filepath.Dir(db), "x.sfb")
	base := []string{"rebuild", "--db", db, "--table", "records", "--column", "id", "--out", out}
	for _, extra := range [][]string{
		{"--fpr", "0.5x"}, {"--fpr", "1"}, {"--capacity", "18446744073709551615"}, {"--capacity", "1e6"},
		{"--headroom", "1e308"}, {"--headroom", "2x"}, {"--capacity", "40000000000"}, {"--busy-timeout", "5"},
		{"--mode", "0400"}, {"--mode", "644x"}, {"--log-retain", "-1"},
	} {
		start := time.Now()
		r := run(t, "", append(cloneArgs(base), extra...)...)
		if r.code != 2 || !strings.Contains(r.stderr, extra[0]) {
			t.Errorf("%v: exit %d, %q", extra, r.code, r.stderr)
		}
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("%v: refused only after %v", extra, took) // a hang detector, far above a refusal that reads nothing
		}
	}
}

func cloneArgs(s []string) []string { return append([]string(nil), s...) }

func TestOutIsCheckedBeforeTheScan(t *testing.T) {
	t.Parallel()
	db := plainApp(t)
	before := state(t, db)
	dir := filepath.Dir(db)
	for _, tc := range []struct{ out, want string }{
		{filepath.Join(dir, "no-such-dir", "r.sfb"), "no such file or directory"},
		{dir, "is a directory"},
		{db, "database's own file"},
	} {
		r := run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", tc.out)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "rows") {
			t.Fatalf("--out %s: exit %d, %q", tc.out, r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "rebuild: rebuild:") {
			t.Fatalf("doubled prefix: %q", r.stderr)
		}
		if state(t, db) != before {
			t.Fatalf("--out %s: the database was attached before the refusal", tc.out)
		}
	}
	r := run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", filepath.Join(dir, "r.sfb"),
		"--metrics-file", filepath.Join(dir, "no-such-dir", "m.prom"))
	if r.code == 0 || !strings.Contains(r.stderr, "metrics file") || state(t, db) != before {
		t.Fatalf("--metrics-file in a missing directory: exit %d, %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "r.sfb")); !os.IsNotExist(err) {
		t.Fatal("a refused run wrote the snapshot")
	}
	if _, err := sqlDB(t, db).Exec(`INSERT INTO records (id) VALUES ('after-refusals')`); err != nil {
		t.Fatalf("the app's INSERT fails after the refusals: %v", err)
	}
	r = run(t, "", "rebuild", "--db", filepath.Join(dir, "typo.db"), "--table", "records", "--column", "id", "--out", filepath.Join(dir, "r.sfb"))
	if r.code != 1 || !strings.Contains(r.stderr, "typo.db does not exist") || strings.Contains(r.stderr, "table or column not found") {
		t.Fatalf("missing database: exit %d, %q", r.code, r.stderr)
	}
}

// cronDB holds rows the summary must account for: text ids, one not valid
// UTF-8, one stored as a BLOB, one NULL.
func cronDB(t *testing.T) string {
	t.Helper()
	db := appDB(t, 1000)
	raw := sqlDB(t, db)
	for _, q := range []string{
		`INSERT INTO records (id) VALUES (CAST(x'ff61' AS TEXT))`,
		`INSERT INTO records (id) VALUES (x'0102')`,
		`CREATE TABLE loose (id TEXT UNIQUE)`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func TestCronOutputAndMetrics(t *testing.T) {
	t.Parallel()
	db := cronDB(t)
	dir := filepath.Dir(db)
	out, prom := filepath.Join(dir, "r.sfb"), filepath.Join(dir, "syncfilter.prom")
	r := run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", out, "--metrics-file", prom, "--mode", "0644").must(t, 0)
	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ syncfilter rebuild: wrote `)
	if !stamp.MatchString(r.stdout) || !strings.Contains(r.stdout, "1005 rows, 1003 keys, 2 skipped (1 invalid text, 1 BLOB, 0 NULL)") {
		t.Fatalf("summary: %q", r.stdout)
	}
	if info, err := os.Stat(out); err != nil || info.Mode().Perm() != 0o644 {
		t.Fatalf("--mode 0644: %v, %v", info.Mode(), err)
	}
	metrics, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"syncfilter_rebuild_last_success_timestamp_seconds", "syncfilter_rebuild_duration_seconds",
		`syncfilter_rebuild_rows{table="records",column="id"} 1005`, `syncfilter_rebuild_skipped_rows{table="records",column="id"} 2`, "syncfilter_rebuild_bytes", "syncfilter_rebuild_estimated_fpr"} {
		if !strings.Contains(string(metrics), name) {
			t.Fatalf("metrics lack %q:\n%s", name, metrics)
		}
	}
	var sum summary
	r = run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", out, "--json").must(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || sum.Rows != 1005 || sum.Keys != 1003 || sum.SkippedText != 1 || sum.SkippedBlob != 1 || sum.Generation == 0 && sum.Bytes == 0 {
		t.Fatalf("--json: %q (%v)", r.stdout, err)
	}
	// A failure writes the failure metric.
	r = run(t, "", "rebuild", "--db", db, "--table", "loose", "--column", "id", "--out", out, "--metrics-file", prom)
	metrics, _ = os.ReadFile(prom)
	if r.code != 1 || !strings.Contains(string(metrics), "syncfilter_rebuild_last_failure_timestamp_seconds") {
		t.Fatalf("failed run: exit %d, metrics %s", r.code, metrics)
	}
}

// openPTY returns the two ends of a new pseudo-terminal of cols columns.
func openPTY(t *testing.T, cols int) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("pty number: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open pty: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: uint16(cols)}); err != nil {
		t.Fatal(err)
	}
	return m, s
}

// TestProgressBarFitsATerminal runs a rebuild with stderr on a 60-column
// pseudo-terminal: the bar is drawn and no frame reaches the last column.
func TestProgressBarFitsATerminal(t *testing.T) {
	t.Parallel()
	db := appDB(t, 120_000)
	master, slave := openPTY(t, 60)
	defer master.Close()
	cmd := exec.Command(binary, "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", filepath.Join(filepath.Dir(db), "r.sfb"))
	cmd.Stderr = slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var screen bytes.Buffer
	done := make(chan struct{})
	go func() { _, _ = io.Copy(&screen, master); close(done) }() // ends with EIO when the child exits
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	<-done
	if !strings.Contains(screen.String(), "\r[") {
		t.Fatalf("no bar on the terminal: %q", screen.String())
	}
	for _, line := range strings.Split(screen.String(), "\n") {
		for _, frame := range strings.Split(line, "\r") {
			frame = strings.TrimSuffix(strings.TrimSuffix(frame, "\x1b[K"), "\r")
			if n := utf8.RuneCountInString(frame); n >= 60 {
				t.Fatalf("a %d-column frame on a 60-column terminal: %q", n, frame)
			}
		}
	}
}

// startPiped starts the command with pipes on stdin and stdout and
// stderr collected.
func startPiped(t *testing.T, args ...string) (*exec.Cmd, io.WriteCloser, io.ReadCloser, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, in, out, stderr
}

// answersOf runs cmd with its stdin kept open, writes keys one at a time,
// and requires each answer before the next key is written.
func answersOf(t *testing.T, keys []string, args ...string) []string {
	t.Helper()
	cmd, in, outPipe, stderr := startPiped(t, args...)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(outPipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var got []string
	for _, k := range keys {
		if _, err := io.WriteString(in, k+"\n"); err != nil {
			t.Fatal(err)
		}
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("output ended early; stderr %q", stderr.String())
			}
			got = append(got, l)
		case <-time.After(30 * time.Second):
			t.Fatalf("no answer to %q while stdin stays open: the command waits for more input", k)
		}
	}
	in.Close()
	_ = cmd.Wait()
	return got
}

func TestQueryAndCheckAnswerAsKeysArrive(t *testing.T) {
	t.Parallel()
	db := appDB(t, 100)
	snap := filepath.Join(filepath.Dir(db), "r.sfb")
	run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", snap).must(t, 0)
	got := answersOf(t, []string{"rec-1", "nope", "rec-2"}, "query", "--db", db, snap)
	if want := []string{"maybe\trec-1", "absent\tnope", "maybe\trec-2"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("query: %q, want %q", got, want)
	}
	got = answersOf(t, []string{"rec-1", "nope", "cafe\u0301"}, "check", "--db", db, "--table", "records", "--column", "id", "--snapshot", snap)
	if want := []string{"fetched\trec-1", "missing\tnope", "fetched\tcafe\u0301"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("check: %q, want %q", got, want)
	}
}

func TestInvalidKeysDoNotStopTheRun(t *testing.T) {
	t.Parallel()
	db := appDB(t, 100)
	snap := filepath.Join(filepath.Dir(db), "r.sfb")
	run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", snap).must(t, 0)
	exact, over := strings.Repeat("k", maxKeyBytes), strings.Repeat("k", maxKeyBytes+1)
	stdin := "rec-1\nbad\xff\n" + exact + "\n" + over + "\nrec-2\n"
	r := run(t, stdin, "query", "--db", db, snap)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != exitInvalid || len(lines) != 5 || lines[0] != "maybe\trec-1" || lines[1] != `invalid	"bad\xff"` ||
		lines[2] != "absent\t"+exact || !strings.HasPrefix(lines[3], "invalid\t") || lines[4] != "maybe\trec-2" {
		t.Fatalf("query: exit %d, stdout %.300q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "invalid UTF-8") || !strings.Contains(r.stderr, fmt.Sprintf("longer than %d bytes", maxKeyBytes)) {
		t.Fatalf("reasons: %q", r.stderr)
	}
	r = run(t, stdin, "check", "--db", db, "--table", "records", "--column", "id")
	lines = strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != exitInvalid || len(lines) != 5 || lines[0] != "fetched\trec-1" || lines[1] != `invalid	"bad\xff"` ||
		lines[2] != "missing\t"+exact || !strings.HasPrefix(lines[3], "invalid\t") || lines[4] != "fetched\trec-2" {
		t.Fatalf("check: exit %d, stdout %.300q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestJSONOutputAndExitCode(t *testing.T) {
	t.Parallel()
	db := appDB(t, 100)
	snap := filepath.Join(filepath.Dir(db), "r.sfb")
	run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", snap).must(t, 0)
	r := run(t, "rec-1\ntab\tid\n", "check", "--db", db, "--table", "records", "--column", "id", "--json").must(t, 0)
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	var recs []map[string]string
	for dec.More() {
		var m map[string]string
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, m)
	}
	if len(recs) != 2 || recs[0]["key"] != "rec-1" || recs[0]["answer"] != "fetched" || recs[1]["key"] != "tab\tid" || recs[1]["answer"] != "missing" {
		t.Fatalf("--json: %q", r.stdout)
	}
	run(t, "rec-1\n", "check", "--db", db, "--table", "records", "--column", "id", "--exit-code").must(t, 0)
	run(t, "rec-1\nnew\n", "check", "--db", db, "--table", "records", "--column", "id", "--exit-code").must(t, exitMissing)
	run(t, "rec-1\nnew\n", "check", "--db", db, "--table", "records", "--column", "id").must(t, 0)
}

func TestTextOutputIsUnambiguous(t *testing.T) {
	t.Parallel()
	db := appDB(t, 10)
	snap := filepath.Join(filepath.Dir(db), "r.sfb")
	run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", snap).must(t, 0)
	keys := []string{"tab\tid", `"tab\tid"`, ` lead`, `trail `, `plain`, `back\slash`, `quo"te`, "line\u2028sep"}
	r := run(t, "", append([]string{"query", "--db", db, snap, "--"}, keys...)...).must(t, 0)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	seen := map[string]bool{}
	for i, l := range lines {
		field := strings.SplitN(l, "\t", 2)[1]
		back := field
		if strings.HasPrefix(field, `"`) {
			var err error
			if back, err = strconv.Unquote(field); err != nil {
				t.Fatalf("%q: %v", field, err)
			}
		}
		if back != keys[i] || seen[field] {
			t.Fatalf("key %q printed as %q", keys[i], field)
		}
		seen[field] = true
	}
	if lines[4] != "absent\tplain" || lines[5] != `absent	back\slash` {
		t.Fatalf("plain keys are quoted: %q", lines[4:6])
	}
}

// TestVerifyRefusesWhatThisBuildCannotUse: an intact snapshot of another
// Unicode version exits 3 with the reason.
func TestVerifyRefusesWhatThisBuildCannotUse(t *testing.T) {
	t.Parallel()
	db := appDB(t, 10)
	snap := filepath.Join(filepath.Dir(db), "r.sfb")
	run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", snap).must(t, 0)
	raw, _ := os.ReadFile(snap)
	copy(raw[136:152], append([]byte("14.0.0"), make([]byte, 10)...))
	hs := blake3.Sum256(raw[:184])
	copy(raw[184:192], hs[:8])
	sum := blake3.Sum256(raw[:len(raw)-32])
	copy(raw[len(raw)-32:], sum[:])
	_ = os.WriteFile(snap, raw, 0o600)
	r := run(t, "", "verify", snap)
	if r.code != exitSnapshot || !strings.Contains(r.stderr, "unicode version 14.0.0") {
		t.Fatalf("verify: exit %d, %q", r.code, r.stderr)
	}
	run(t, "", "inspect", snap).must(t, 0) // inspect still shows it
}

func TestStatus(t *testing.T) {
	t.Parallel()
	db := plainApp(t)
	snap := filepath.Join(filepath.Dir(db), "r.sfb")
	before := state(t, db)
	r := run(t, "", "status", "--db", db, "--table", "records", "--column", "id").must(t, 0)
	if !strings.Contains(r.stdout, "attached        no") || state(t, db) != before {
		t.Fatalf("status of a database never attached: %q", r.stdout)
	}
	run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", snap).must(t, 0)
	if _, err := sqlDB(t, db).Exec(`INSERT INTO records (id) VALUES ('later-1'), ('later-2')`); err != nil {
		t.Fatal(err)
	}
	before = state(t, db)
	r = run(t, "", "status", "--db", db, "--table", "RECORDS", "--column", "id", "--snapshot", snap, "--json").must(t, 0)
	var st statusJSON
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatal(err)
	}
	if !st.Attached || st.Table != "records" || st.Triggers != 2 || st.Rows != 5 || st.Spellings != 1 || st.Snapshot == nil ||
		!st.Snapshot.Compatible || st.Snapshot.GenerationLag != 2 || st.Records != 1 || st.DatasetID == "" {
		t.Fatalf("status --json: %s", r.stdout)
	}
	if state(t, db) != before {
		t.Fatal("status changed the database")
	}
	_ = os.WriteFile(snap, []byte("garbage"), 0o600)
	r = run(t, "", "status", "--db", db, "--table", "records", "--column", "id", "--snapshot", snap).must(t, 0)
	if !strings.Contains(r.stdout, "not usable") {
		t.Fatalf("status with a damaged snapshot: %q", r.stdout)
	}
}

// peakRSSFeeding runs the command with n generated keys on stdin and
// returns its exit code, its peak resident memory and the answers counted.
func peakRSSFeeding(t *testing.T, n int, args ...string) (int, int64, int) {
	t.Helper()
	cmd, in, outPipe, stderr := startPiped(t, args...)
	peak := watchRSS(cmd.Process.Pid)
	go func() {
		w := bufio.NewWriterSize(in, 1<<16)
		for i := range n {
			fmt.Fprintf(w, "key-%09d-%s\n", i, "0123456789abcdef0123456789")
		}
		w.Flush()
		in.Close()
	}()
	answers := 0
	sc := bufio.NewScanner(outPipe)
	for sc.Scan() {
		answers++
	}
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
	}
	return code, peakRSS(t, cmd, peak), answers
}

// TestStreamingMemoryIsBounded feeds 3M keys through a pipe: query stays
// under 64 MiB resident, check under 128 MiB, every key answered.
func TestStreamingMemoryIsBounded(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("3M keys")
	}
	n := 3_000_000
	if raceBuild() {
		n = 300_000 // the race detector's runtime is slower and larger: fewer keys, same bounds
	}
	db := appDB(t, 50_000)
	snap := filepath.Join(filepath.Dir(db), "r.sfb")
	run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", snap).must(t, 0)
	for _, tc := range []struct {
		args  []string
		limit int64
	}{
		{[]string{"query", "--db", db, snap}, 64 << 20},
		{[]string{"check", "--db", db, "--table", "records", "--column", "id", "--snapshot", snap}, 128 << 20},
	} {
		_, rss, answers := peakRSSFeeding(t, n, tc.args...)
		if answers != n {
			t.Fatalf("%s: %d answers for %d keys", tc.args[0], answers, n)
		}
		if rss > tc.limit {
			t.Fatalf("%s of %d keys peaked at %d MiB resident, limit %d MiB", tc.args[0], n, rss>>20, tc.limit>>20)
		}
		t.Logf("%s: %d keys, %d MiB resident", tc.args[0], n, rss>>20)
	}
}

func raceBuild() bool {
	for _, f := range buildFlags {
		if f == "-race" {
			return true
		}
	}
	return false
}

// TestOperationsExamplesRun runs the command-line examples of
// docs/OPERATIONS.md as written, with the binary on PATH, in a directory
// holding app.db.
func TestOperationsExamplesRun(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "These examples run as written")
	if !ok {
		t.Fatal("docs/OPERATIONS.md lost its examples")
	}
	_, block, _ := strings.Cut(after, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	dir := t.TempDir()
	raw := sqlDB(t, filepath.Join(dir, "app.db"))
	if _, err := raw.Exec(`CREATE TABLE records (id TEXT PRIMARY KEY); INSERT INTO records VALUES ('id-1'), ('id-2'), ('id-3')`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("docs/OPERATIONS.md example %q: %v\n%s", line, err, out)
		}
		n++
	}
	if n < 8 {
		t.Fatalf("only %d examples found", n)
	}
}

// TestCompareBytesCommands: a source rebuilt with --compare bytes is
// answered byte for byte by check (the NFD id stored, its NFC spelling
// another record) and by query; check and status without --compare
// refuse it, naming the mode; rebuild --all keeps the recorded mode.
func TestCompareBytesCommands(t *testing.T) {
	t.Parallel()
	db := appDB(t, 10)
	snap := filepath.Join(filepath.Dir(db), "r.sfb")
	src := []string{"--db", db, "--table", "records", "--column", "id"}
	run(t, "", append([]string{"rebuild", "--compare", "bytes", "--out", snap}, src...)...).must(t, 0)
	nfd, nfc := "cre\u0300me", "cr\u00e8me"
	r := run(t, nfd+"\n"+nfc+"\nrec-1\n", append([]string{"check", "--compare", "bytes", "--snapshot", snap}, src...)...).must(t, 0)
	if want := "fetched\t" + nfd + "\nmissing\t" + nfc + "\nfetched\trec-1\n"; r.stdout != want {
		t.Errorf("check --compare bytes: %q, want %q", r.stdout, want)
	}
	for _, cmd := range [][]string{{"check"}, {"status"}} {
		r := run(t, nfd+"\n", append(cmd, src...)...)
		if r.code == 0 || !strings.Contains(r.stderr, "bytes/1") {
			t.Errorf("%s without --compare on a bytes source: exit %d, %s", cmd[0], r.code, r.stderr)
		}
	}
	if r := run(t, nfc+"\n", "query", snap, "--db", db); r.code != 0 || !strings.HasPrefix(r.stdout, "absent") {
		t.Errorf("query of the NFC spelling in a bytes/1 snapshot: exit %d, %q %s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, "", append([]string{"status", "--compare", "bytes"}, src...)...).must(t, 0); !strings.Contains(r.stdout, "ids compared bytes") {
		t.Errorf("status of a bytes source: %s", r.stdout)
	}
	if r := run(t, "", "status", "--all", "--json", "--db", db).must(t, 0); !strings.Contains(r.stdout, `"compare": "bytes"`) {
		t.Errorf("status --all --json of a bytes source: %s", r.stdout)
	}
	run(t, "", "rebuild", "--all", "--db", db).must(t, 0)
	run(t, nfc+"\n", append([]string{"check", "--compare", "bytes", "--exit-code"}, src...)...).must(t, exitMissing)
}

// TestCheckVersions: check --version-column answers id<TAB>version lines
// per line: have or need in text, new and updated apart in --json; an
// INTEGER column's versions are parsed as integers (a line whose version
// is not one, or without a version, is "invalid" and the others are
// answered); --exit-code says whether any is needed.
func TestCheckVersions(t *testing.T) {
	t.Parallel()
	db := appDB(t, 10)
	sdb, err := sql.Open("sqlite3", db)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`ALTER TABLE records ADD COLUMN ver INTEGER`, `UPDATE records SET ver = 3`, `UPDATE records SET ver = NULL WHERE id = 'rec-4'`} {
		if _, err := sdb.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	sdb.Close()
	src := []string{"--db", db, "--table", "records", "--column", "id", "--version-column", "ver"}
	in := "rec-1\t5\nrec-2\t3\nrec-3\t1\nnew\t1\nrec-4\t1\nnoversion\nrec-5\tabc\ncr\u00e8me\t3\n"
	r := run(t, in, append([]string{"check"}, src...)...)
	if r.code != exitInvalid {
		t.Fatalf("exit %d, want %d (invalid lines): %s", r.code, exitInvalid, r.stderr)
	}
	want := "need\trec-1\t5\nhave\trec-2\t3\nhave\trec-3\t1\nneed\tnew\t1\nneed\trec-4\t1\ninvalid\tnoversion\ninvalid\t\"rec-5\\tabc\"\nhave\tcr\u00e8me\t3\n"
	if r.stdout != want {
		t.Errorf("text:\n%s\nwant:\n%s", r.stdout, want)
	}
	r = run(t, "rec-1\t5\nrec-2\t3\nnew\t1\n", append([]string{"check", "--json"}, src...)...).must(t, 0)
	var got []string
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	for dec.More() {
		var m map[string]string
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		got = append(got, m["key"]+"/"+m["version"]+"/"+m["answer"])
	}
	if strings.Join(got, " ") != "rec-1/5/updated rec-2/3/have new/1/new" {
		t.Errorf("--json: %q", got)
	}
	run(t, "rec-2\t3\n", append([]string{"check", "--exit-code"}, src...)...).must(t, 0)
	run(t, "rec-2\t3\nrec-1\t9\n", append([]string{"check", "--exit-code"}, src...)...).must(t, exitMissing)
}
