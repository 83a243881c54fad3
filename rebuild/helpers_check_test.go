package rebuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

// What the tests check answers and files against: the table as read on
// a connection of its own, the schema, the journal mode, the files of a
// directory, an error's text.

// expect checks Fetched and Missing against the reference set of fetched
// ids.
func expect(t testing.TB, ix *Index, fetched map[string]bool, probe []string) {
	t.Helper()
	ctx := context.Background()
	missing, err := missingList(ctx, ix, probe)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, k := range probe {
		if !fetched[k] {
			want = append(want, k)
		}
	}
	if fmt.Sprint(missing) != fmt.Sprint(want) {
		t.Fatalf("Missing = %d keys %.200v\nwant %d keys %.200v", len(missing), missing, len(want), want)
	}
	for _, k := range probe {
		got, err := ix.Fetched(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if got != fetched[k] {
			t.Fatalf("Fetched(%+q) = %v, want %v", k, got, fetched[k])
		}
	}
}

// exact checks Missing and Fetched of every probe key against the
// reference set (stored ids), reporting the keys answered wrongly.
func exact(t testing.TB, ix *Index, fetched map[string]bool, probe []string) {
	t.Helper()
	ctx := context.Background()
	missing, err := missingList(ctx, ix, probe)
	if err != nil {
		t.Fatalf("Missing: %v", err)
	}
	isMissing := map[string]bool{}
	for _, k := range missing {
		isMissing[k] = true
	}
	var wrongMissing, wrongFetched []string
	seen := map[string]bool{}
	for _, k := range probe {
		if seen[k] {
			continue
		}
		seen[k] = true
		if fetched[k] && isMissing[k] {
			wrongMissing = append(wrongMissing, k)
		}
		if !fetched[k] && !isMissing[k] {
			wrongFetched = append(wrongFetched, k)
		}
		got, err := ix.Fetched(ctx, k)
		if err != nil {
			t.Fatalf("Fetched(%q): %v", k, err)
		}
		if got != fetched[k] {
			t.Errorf("Fetched(%q) = %v, want %v", k, got, fetched[k])
		}
	}
	if len(missing) != len(seen)-len(stored(fetched, probe)) {
		t.Errorf("Missing listed %d keys, want %d", len(missing), len(seen)-len(stored(fetched, probe)))
	}
	if len(wrongMissing)+len(wrongFetched) > 0 {
		t.Fatalf("Missing: %d stored ids listed missing %.120v; %d never-stored ids not listed %.120v",
			len(wrongMissing), wrongMissing, len(wrongFetched), wrongFetched)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// stored returns the distinct probe keys in fetched.
func stored(fetched map[string]bool, probe []string) map[string]bool {
	out := map[string]bool{}
	for _, k := range probe {
		if fetched[k] {
			out[k] = true
		}
	}
	return out
}

// tableIDs returns the ids a table stores (text only), read on a
// connection of its own: the reference the index's answers must match.
func tableIDs(t testing.TB, path, table string) map[string]bool {
	t.Helper()
	db, err := testdriver.Open(path, testdriver.App{ReadOnly: true, BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id FROM "` + table + `" WHERE typeof(id) = 'text'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// libraryObjects lists the library's objects in sqlite_master as
// "type name on tbl_name", sorted.
func libraryObjects(t testing.TB, path string) []string {
	t.Helper()
	db, err := testdriver.Open(path, testdriver.App{ReadOnly: true, BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT type || ' ' || name || ' on ' || tbl_name FROM sqlite_master WHERE name LIKE 'syncfilter%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// dirEntries lists a directory's names, sorted.
func dirEntries(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// integrity runs PRAGMA integrity_check on its own connection.
func integrity(t testing.TB, path string) {
	t.Helper()
	db, err := testdriver.Open(path, testdriver.App{BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check of %s: %q, %v", path, check, err)
	}
}

// missingOf is what Missing must answer about probe when stored holds
// exactly the stored ids.
func missingOf(probe []string, stored map[string]bool) []string {
	var out []string
	for _, k := range probe {
		if !stored[k] {
			out = append(out, k)
		}
	}
	return out
}

// schema returns every row of sqlite_master, all columns, in a fixed
// order, as bytes: two equal results mean an identical schema.
func schema(t testing.TB, path string) []byte {
	t.Helper()
	db, err := testdriver.Open(path, testdriver.App{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT type, name, tbl_name, rootpage, coalesce(sql, '<null>') FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b bytes.Buffer
	for rows.Next() {
		var typ, name, tbl, ddl string
		var root int64
		if err := rows.Scan(&typ, &name, &tbl, &root, &ddl); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s\x00%s\x00%s\x00%d\x00%s\n", typ, name, tbl, root, ddl)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func journalMode(t testing.TB, path string) string {
	t.Helper()
	db, err := testdriver.Open(path, testdriver.App{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	return mode
}

func fileSum(t testing.TB, path string) [32]byte {
	t.Helper()
	return sha256.Sum256(readFile(t, path))
}

// Descriptors the tests read database files through, kept open until the
// tests end (TestMain closes them). Closing any descriptor of a file
// releases every POSIX lock this process holds on it (fcntl semantics),
// the locks of the SQLite connections open on it included: a test that
// read a live database through os.ReadFile or an os.Open closed at once
// took the locks away from the library's and the app's connections, and
// SQLite before 3.51 then lost a WAL. SQLite keeps its own descriptors
// open while a lock is held for the same reason.
var held struct {
	sync.Mutex
	files []*os.File
}

// heldOpen returns a descriptor open on the file now at path (one per
// file: a file renamed over path gets another), never closed before the
// tests end.
func heldOpen(t testing.TB, path string) *os.File {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	held.Lock()
	defer held.Unlock()
	for _, f := range held.files {
		if gi, err := f.Stat(); err == nil && os.SameFile(fi, gi) {
			return f
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	held.files = append(held.files, f)
	return f
}

// closeHeld closes the descriptors of heldOpen, once no test runs.
func closeHeld() {
	held.Lock()
	defer held.Unlock()
	for _, f := range held.files {
		_ = f.Close()
	}
	held.files = nil
}

// headerMode reads the database header's read/write versions: "wal" (2)
// or "rollback" (1). A rollback mode (DELETE, TRUNCATE, PERSIST) is a
// setting of each connection; WAL is recorded in the file.
func headerMode(t testing.TB, path string) string {
	t.Helper()
	var h [20]byte
	if _, err := heldOpen(t, path).ReadAt(h[:], 0); err != nil {
		t.Fatal(err)
	}
	switch {
	case h[18] == 2 && h[19] == 2:
		return "wal"
	case h[18] == 1 && h[19] == 1:
		return "rollback"
	}
	t.Fatalf("header versions %d, %d", h[18], h[19])
	return ""
}

// unlocked checks that another connection can write and commit: nothing
// the library does holds a lock on the file for longer than a statement
// (SQLite waits 5 s for a lock a statement holds).
func unlocked(t testing.TB, path, table string) {
	t.Helper()
	db, err := testdriver.Open(path, testdriver.App{BusyTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	id := fmt.Sprintf("lockprobe-%d", time.Now().UnixNano())
	if err := tryInsert(db, table, id); err != nil {
		t.Fatalf("the database is locked for another connection: %v", err)
	}
}

// causesOnce checks that err, returned because ctx ran out, says so,
// and names every cause once: "context deadline exceeded" once, and no
// line of its text twice.
func causesOnce(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s = %v, want the context's error", what, err)
	}
	text := err.Error()
	if n := strings.Count(text, context.DeadlineExceeded.Error()); n != 1 {
		t.Fatalf("%s: %q says %q %d times", what, text, context.DeadlineExceeded.Error(), n)
	}
	seen := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		if seen[l] {
			t.Fatalf("%s: %q says %q twice", what, text, l)
		}
		seen[l] = true
	}
}

func isInterrupted(err error) bool {
	return err != nil && strings.Contains(err.Error(), "interrupt")
}

// readFile returns the content of path, read through a descriptor
// heldOpen keeps (the file may be a live database or its -shm).
func readFile(t testing.TB, path string) []byte {
	t.Helper()
	f := heldOpen(t, path)
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return b
}
