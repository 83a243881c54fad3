// Package clitest runs the command line on an encrypted database, for
// the tests of the modules that link an encrypting driver
// (internal/sqlcipher, internal/ncruces): it builds cmd/syncfilter with
// that driver's file (cmd/syncfilter/driver_*.go, through an overlay and
// the module's workspace, as make cli-sqlcipher and cli-ncruces do), and
// runs rebuild, status, check, query and detach with the key in
// SYNCFILTER_CONN_PARAMS or in a file SYNCFILTER_CONN_PARAMS_FILE names.
package clitest

import (
	"bytes"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Setup is one encrypting driver.
type Setup struct {
	DriverFile string     // cmd/syncfilter's file that sets the driver, first line //go:build ignore
	BuildLine  string     // the build constraint the overlay puts in its place
	Work       string     // the workspace, from the module's root
	BuildEnv   []string   // CGO_ENABLED
	Tags       string     // -tags
	Params     url.Values // the parameters that carry the key
	Key        string     // the key, hex
	Wrong      url.Values // parameters with a wrong key
	// Open opens path as the app does, with params.
	Open func(path string, params url.Values) (*sql.DB, error)
}

// Run: the command runs rebuild, status, check, query and detach on an
// encrypted database, the key in SYNCFILTER_CONN_PARAMS or in a file
// SYNCFILTER_CONN_PARAMS_FILE names, never on its command line. Without
// the key, or with a wrong one, rebuild is refused with a usage error that
// says how to give it, shows no key, and writes nothing. No file beside
// the database holds the key or a stored id.
func Run(t *testing.T, s Setup) {
	bin := buildCommand(t, s)
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	params := s.Params
	app, err := s.Open(path, params)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if _, err := app.Exec(`CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`); err != nil {
		t.Fatal(err)
	}
	var stored []string
	for i := range 300 {
		id := fmt.Sprintf("secret-rec-%04d", i)
		if i%50 == 0 {
			id = fmt.Sprintf("cafe\u0301-secret-%d", i) // NFD: answered for its NFC spelling too
		}
		if _, err := app.Exec(`INSERT INTO records (id, body) VALUES (?, 'x')`, id); err != nil {
			t.Fatal(err)
		}
		stored = append(stored, id)
	}
	snap := filepath.Join(dir, "records.sfb")
	withKey := []string{"SYNCFILTER_CONN_PARAMS=" + params.Encode()}
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(params.Encode()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile := []string{"SYNCFILTER_CONN_PARAMS_FILE=" + keyFile}
	wrong := s.Wrong

	// No key, a wrong one: refused, nothing written.
	for _, env := range [][]string{nil, {"SYNCFILTER_CONN_PARAMS=" + wrong.Encode()}} {
		before := files(t, dir)
		r := run(t, s, bin, env, "rebuild", "--db", path, "--table", "records", "--column", "id", "--out", snap)
		if r.code != 2 || !strings.Contains(r.stderr, "key is wrong or missing") || !strings.Contains(r.stderr, "SYNCFILTER_CONN_PARAMS") {
			t.Fatalf("rebuild with %v: exit %d, stderr %s; want 2 saying how to give the key", env, r.code, r.stderr)
		}
		if strings.Contains(strings.ToLower(r.stderr), strings.ToLower(s.Key)) || containsValue(r.stderr, wrong) {
			t.Fatalf("the error shows a key: %s", r.stderr)
		}
		if after := files(t, dir); !sameBeside(before, after, filepath.Base(path)) {
			t.Fatalf("a refused rebuild changed the files beside the database: %v -> %v", keys(before), keys(after))
		}
		var n int
		if err := app.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name LIKE 'syncfilter%'`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("a refused rebuild left %d objects in the database (%v)", n, err)
		}
	}

	run(t, s, bin, withKey, "rebuild", "--db", path, "--table", "records", "--column", "id", "--out", snap).must(t, 0)
	st := run(t, s, bin, fromFile, "status", "--db", path, "--table", "records", "--column", "id", "--snapshot", snap).must(t, 0)
	if !strings.Contains(st.stdout, "records") {
		t.Fatalf("status says nothing of the source: %s", st.stdout)
	}
	asked := []string{stored[1], stored[2], "caf\u00e9-secret-0", "secret-new-1", "secret-new-2"}
	check := run(t, s, bin, fromFile, append([]string{"check", "--db", path, "--table", "records", "--column", "id", "--snapshot", snap}, asked...)...).must(t, 0)
	for i, want := range []string{"fetched", "fetched", "fetched", "missing", "missing"} {
		if line := lineOf(check.stdout, i); line != want+"\t"+asked[i] {
			t.Fatalf("check %q: %q, want %s\n%s", asked[i], line, want, check.stdout)
		}
	}
	query := run(t, s, bin, withKey, append([]string{"query", snap, "--db", path}, asked[:3]...)...).must(t, 0)
	for i := range 3 {
		if line := lineOf(query.stdout, i); line != "maybe\t"+asked[i] {
			t.Fatalf("query %q: %q, want maybe\n%s", asked[i], line, query.stdout)
		}
	}
	// The snapshot without the database: its header holds no key, so
	// query without --db cannot test an id.
	if r := run(t, s, bin, nil, "query", snap, stored[1]); r.code == 0 {
		t.Fatalf("query of a snapshot without its database answered: %s", r.stdout)
	}
	noLeak(t, s, dir, path, stored)
	run(t, s, bin, withKey, "detach", "--db", path, "--table", "records", "--column", "id", "--snapshot", snap).must(t, 0)
	if _, err := os.Stat(snap); !os.IsNotExist(err) {
		t.Fatalf("the snapshot is still there after detach: %v", err)
	}
	var n int
	if err := app.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name LIKE 'syncfilter%'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d of the library's objects left after detach (%v)", n, err)
	}
}

// containsValue reports whether text holds a value of q of at least 16
// bytes (a key; not a VFS's name).
func containsValue(text string, q url.Values) bool {
	for _, vs := range q {
		for _, v := range vs {
			if len(v) >= 16 && strings.Contains(text, v) {
				return true
			}
		}
	}
	return false
}

// buildCommand builds cmd/syncfilter with the setup's driver file, as make
// cli-sqlcipher and cli-ncruces do.
func buildCommand(t *testing.T, s Setup) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/syncfilter/syncfilter").Output()
	if err != nil {
		t.Fatalf("go list the module's root: %v", err)
	}
	root := strings.TrimSpace(string(out))
	tmp := t.TempDir()
	src, err := os.ReadFile(filepath.Join(root, s.DriverFile))
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := bytes.Cut(src, []byte("\n"))
	if string(first) != "//go:build ignore" {
		t.Fatalf("%s begins %q", s.DriverFile, first)
	}
	driver := filepath.Join(tmp, "driver.go")
	if err := os.WriteFile(driver, append([]byte(s.BuildLine+"\n"), rest...), 0o644); err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlay, fmt.Appendf(nil, `{"Replace":{%q:%q}}`, filepath.Join(root, s.DriverFile), driver), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "syncfilter")
	cmd := exec.Command("go", "build", "-tags", s.Tags, "-overlay", overlay, "-o", bin, "./cmd/syncfilter")
	cmd.Dir = root
	cmd.Env = append(append(os.Environ(), "GOWORK="+filepath.Join(root, s.Work)), s.BuildEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type result struct {
	code           int
	stdout, stderr string
}

func (r result) must(t *testing.T, code int) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	return r
}

// run runs the command with env added to a copy of the environment
// without SYNCFILTER_CONN_PARAMS*, and checks that no argument holds the
// key.
func run(t *testing.T, s Setup, bin string, env []string, args ...string) result {
	t.Helper()
	for _, a := range args {
		if strings.Contains(strings.ToLower(a), strings.ToLower(s.Key)) {
			t.Fatalf("an argument holds the key: %q", a)
		}
	}
	cmd := exec.Command(bin, args...)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "SYNCFILTER_CONN_PARAMS") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

func lineOf(s string, i int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if i >= len(lines) {
		return ""
	}
	return lines[i]
}

// files reads every file in dir.
func files(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// sameBeside reports whether a and b hold the same files other than the
// database db and its journals (SQLite's, which any connection's close may
// checkpoint).
func sameBeside(a, b map[string][]byte, db string) bool {
	for _, m := range []map[string][]byte{a, b} {
		for k := range m {
			if strings.HasPrefix(k, db) {
				delete(m, k)
			}
		}
	}
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// noLeak fails t if a file in dir other than the database's holds the key
// (hex or raw), or any file a stored id in clear.
func noLeak(t *testing.T, s Setup, dir, path string, ids []string) {
	t.Helper()
	key := strings.ToLower(s.Key)
	raw, _ := hex.DecodeString(key)
	for name, b := range files(t, dir) {
		if !strings.HasPrefix(name, filepath.Base(path)) {
			for _, k := range [][]byte{[]byte(key), bytes.ToUpper([]byte(key)), raw} {
				if bytes.Contains(b, k) {
					t.Errorf("%s holds the key", name)
				}
			}
		}
		for _, id := range ids {
			if bytes.Contains(b, []byte(id)) {
				t.Errorf("%s holds the stored id %q", name, id)
			}
		}
	}
}
