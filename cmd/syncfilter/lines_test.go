package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/rebuild/ops"
)

// line is one input line of check and what it must be answered.
type line struct {
	key    string
	answer string // fetched, missing or invalid
}

// linesDB is appDB with "a", an id stored in NFD and one stored with a
// KELVIN SIGN, each by a plain INSERT, and a snapshot of it.
func linesDB(t *testing.T) (db, snap string) {
	t.Helper()
	db = appDB(t, 100)
	conn, err := sql.Open("sqlite3", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, id := range []string{"a", "cafe\u0301-s", "\u212a-s"} {
		if _, err := conn.Exec(`INSERT INTO records (id) VALUES (?)`, id); err != nil {
			t.Fatal(err)
		}
	}
	snap = filepath.Join(filepath.Dir(db), "r.sfb")
	run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", snap).must(t, 0)
	return db, snap
}

// mixedLines repeat never-stored and stored ids, name stored ids in
// both spellings (one stored in NFD, one with a KELVIN SIGN, one,
// crème, stored in NFD by appDB), and hold invalid keys between them.
func mixedLines() []line {
	return []line{
		{"a", "fetched"},
		{"never-1", "missing"},
		{"never-1", "missing"},
		{"rec-1", "fetched"},
		{"rec-1", "fetched"},
		{"cr\u00e8me", "fetched"},
		{"cre\u0300me", "fetched"},
		{"never-1", "missing"},
		{"bad\xff", "invalid"},
		{"caf\u00e9-s", "fetched"},
		{"cafe\u0301-s", "fetched"},
		{"K-s", "fetched"},
		{"\u212a-s", "fetched"},
		{"never-2", "missing"},
		{strings.Repeat("k", maxKeyBytes+1), "invalid"},
		{"never-2", "missing"},
		{"a", "fetched"},
		{"caf\u00e9-n", "missing"},
		{"cafe\u0301-n", "missing"},
		{"caf\u00e9-n", "missing"},
	}
}

// checkLines compares check's text output, line by line, with want.
func checkLines(t *testing.T, what string, r result, want []line) {
	t.Helper()
	got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("%s: %d lines for %d keys: %.400q", what, len(got), len(want), r.stdout)
	}
	for i, w := range want {
		if len(w.key) > maxKeyBytes { // printed quoted, cut or not, and followed by "..."
			if !strings.HasPrefix(got[i], "invalid\t"+strconv.Quote(w.key[:64])[:65]) || !strings.HasSuffix(got[i], "\"...") {
				t.Fatalf("%s: line %d = %.100q, want an invalid record of the long key", what, i+1, got[i])
			}
			continue
		}
		if exp := w.answer + "\t" + display(w.key); got[i] != exp {
			t.Fatalf("%s: line %d = %.100q, want %.100q", what, i+1, got[i], exp)
		}
	}
}

// TestEveryLineAnsweredOnItsOwn: check answers each input line on its
// own, from SQLite alone and with a snapshot, from stdin (lines and
// NUL-separated), from arguments and in JSON: a never-stored id named
// again is missing every time, a stored id named again or in another
// spelling is fetched every time, and invalid keys between them change
// no other answer. Input long enough for several batches keeps it so.
func TestEveryLineAnsweredOnItsOwn(t *testing.T) {
	t.Parallel()
	db, snap := linesDB(t)
	src := []string{"check", "--db", db, "--table", "records", "--column", "id"}
	for _, extra := range [][]string{nil, {"--snapshot", snap}} {
		args := append(append([]string(nil), src...), extra...)
		name := fmt.Sprintf("check %v", extra)

		r := run(t, "a\nnever-1\nnever-1\n", args...).must(t, 0)
		if want := "fetched\ta\nmissing\tnever-1\nmissing\tnever-1\n"; r.stdout != want {
			t.Fatalf("%s: %q, want %q", name, r.stdout, want)
		}

		want := mixedLines()
		var stdin, nul strings.Builder
		var argv []string
		for _, l := range want {
			stdin.WriteString(l.key + "\n")
			nul.WriteString(l.key + "\x00")
			argv = append(argv, l.key)
		}
		checkLines(t, name+" from stdin", run(t, stdin.String(), args...).must(t, exitInvalid), want)
		checkLines(t, name+" from arguments", run(t, "", append(append(args, "--"), argv...)...).must(t, exitInvalid), want)

		r = run(t, nul.String(), append(args, "-0")...).must(t, exitInvalid)
		recs := strings.Split(strings.TrimSuffix(r.stdout, "\x00"), "\x00")
		if len(recs) != len(want) {
			t.Fatalf("%s -0: %d records for %d keys", name, len(recs), len(want))
		}
		for i, w := range want {
			if len(w.key) > maxKeyBytes {
				continue // its first bytes only
			}
			if exp := w.answer + "\t" + w.key; recs[i] != exp {
				t.Fatalf("%s -0: record %d = %.100q, want %.100q", name, i+1, recs[i], exp)
			}
		}

		r = run(t, stdin.String(), append(args, "--json")...).must(t, exitInvalid)
		dec := json.NewDecoder(strings.NewReader(r.stdout))
		for i, w := range want {
			var rec struct{ Key, Answer string }
			if err := dec.Decode(&rec); err != nil {
				t.Fatalf("%s --json: record %d: %v", name, i+1, err)
			}
			if rec.Answer != w.answer {
				t.Fatalf("%s --json: record %d (%.40q) answered %q, want %q", name, i+1, w.key, rec.Answer, w.answer)
			}
		}
		if dec.More() {
			t.Fatalf("%s --json: more records than keys", name)
		}

		// Several batches: repeats within and across them.
		var many []line
		stdin.Reset()
		for i := range 3 * batchKeys {
			l := []line{{"never-1", "missing"}, {fmt.Sprintf("rec-%d", i%100), "fetched"}, {"cre\u0300me", "fetched"}, {"cafe\u0301-n", "missing"}}[i%4]
			many = append(many, l)
			stdin.WriteString(l.key + "\n")
		}
		checkLines(t, name+", several batches", run(t, stdin.String(), args...).must(t, 0), many)
	}
}

// TestEveryQueryLineAnsweredOnItsOwn: query answers each input line on
// its own: a line named again gets the answer it gets alone (the
// snapshot's filter read in this process), a stored id "maybe" in every
// spelling, an invalid key "invalid" without moving any other answer.
func TestEveryQueryLineAnsweredOnItsOwn(t *testing.T) {
	t.Parallel()
	db, snap := linesDB(t)
	s, err := ops.ReadSnapshot(context.Background(), rebuild.DBConfig{Path: db}, snap)
	if err != nil {
		t.Fatal(err)
	}
	alone := func(k string) string {
		maybe, err := s.Image.MightContainBatch(nil, []string{k})
		if err != nil {
			t.Fatal(err)
		}
		if maybe[0] {
			return "maybe"
		}
		return "absent"
	}
	r := run(t, "a\nnever-1\nnever-1\n", "query", "--db", db, snap).must(t, 0)
	if want := "maybe\ta\n" + alone("never-1") + "\tnever-1\n" + alone("never-1") + "\tnever-1\n"; r.stdout != want {
		t.Fatalf("query: %q, want %q", r.stdout, want)
	}
	var want []line
	var stdin strings.Builder
	for _, l := range mixedLines() {
		switch l.answer {
		case "fetched":
			l.answer = "maybe"
		case "missing":
			l.answer = alone(l.key)
		}
		want = append(want, l)
		stdin.WriteString(l.key + "\n")
	}
	checkLines(t, "query", run(t, stdin.String(), "query", "--db", db, snap).must(t, exitInvalid), want)
}
