package store

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestProbeReadsTheTailWholeOrNot: the probe reads the log's tail after
// the caller's mark only when it reaches the head within the chunk (a gap
// in the numbers, entries deleted, included), with the tag of the entry at
// the mark; a longer tail is not read at all, and the keys are confirmed
// all the same, through the spellings table for the keys Spelled names.
func TestProbeReadsTheTailWholeOrNot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, app := testDBWith(t, Knobs{LogChunk: 64}, `CREATE TABLE t (id TEXT PRIMARY KEY)`)
	s := attach(t, db, "t", "id", false)
	stored := []string{"a0", "cafe\u0301", "a1", "\u212a-1", "a2", "a3", "nai\u0308ve"}
	for _, k := range stored {
		if _, err := app.Exec(`INSERT INTO t (id) VALUES (?)`, k); err != nil {
			t.Fatal(err)
		}
	}
	// A gap: entries deleted in the middle of the log.
	if _, err := app.Exec(`DELETE FROM ` + s.Log + ` WHERE key IN ('a1', 'a2')`); err != nil {
		t.Fatal(err)
	}
	// A stored spelling the spellings table records (as a scan would).
	if _, err := app.Exec(`INSERT INTO `+s.Spellings+` (canon, stored) VALUES (?, ?)`, "na\u00efve", "nai\u0308ve"); err != nil {
		t.Fatal(err)
	}
	c, err := db.Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Release(c)
	schema, err := c.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var tag1 int64
	if err := app.QueryRow(`SELECT tag FROM ` + s.Log + ` WHERE seq = 1`).Scan(&tag1); err != nil {
		t.Fatal(err)
	}
	keys := []string{"a1", "never", "na\u00efve", "a3"}
	spelled := func(k string) bool { return strings.ContainsFunc(k, func(r rune) bool { return r > 0x7f }) }
	for _, tc := range []struct {
		after      uint64
		chunk      int
		nonASCII   bool
		tail       bool
		wantLogged []string
	}{
		{after: 0, chunk: 7, tail: true, wantLogged: []string{"a0", "cafe\u0301", "\u212a-1", "a3", "nai\u0308ve"}},
		{after: 1, chunk: 6, tail: true, wantLogged: []string{"cafe\u0301", "\u212a-1", "a3", "nai\u0308ve"}},
		{after: 1, chunk: 6, nonASCII: true, tail: true, wantLogged: []string{"cafe\u0301", "\u212a-1", "nai\u0308ve"}},
		{after: 0, chunk: 6},
		{after: 1, chunk: 0},
	} {
		var p Probe
		o := ProbeOptions{After: tc.after, Chunk: tc.chunk, NonASCII: tc.nonASCII, Keys: keys, Spellings: true, Spelled: spelled, Schema: schema}
		if err := c.Probe(ctx, s, o, &p); err != nil {
			t.Fatal(err)
		}
		if p.Tail != tc.tail || !slices.Equal(p.Logged, tc.wantLogged) {
			t.Errorf("after %d, chunk %d: tail %v %q, want %v %q", tc.after, tc.chunk, p.Tail, p.Logged, tc.tail, tc.wantLogged)
		}
		if p.Head.Seq != 7 {
			t.Errorf("head %d, want 7", p.Head.Seq)
		}
		if tc.after == 1 && (!p.AfterFound || p.AfterTag != tag1) {
			t.Errorf("tag at 1: %v %d, want %d", p.AfterFound, p.AfterTag, tag1)
		}
		if tc.after == 0 && p.AfterFound {
			t.Errorf("tag at 0 found: %d", p.AfterTag)
		}
		if h, err := c.Head(ctx, s); err != nil || p.Head != h || h.Tag == 0 || !h.HasSpellings || p.Schema != schema {
			t.Errorf("probe's head %+v (cookie %d), Head's %+v (%v), cookie %d", p.Head, p.Schema, h, err, schema)
		}
		if want := []int{0, 2, 3}; !p.Confirmed || !slices.Equal(p.Found, want) {
			t.Errorf("after %d, chunk %d: confirmed %v, found %v; want %v", tc.after, tc.chunk, p.Confirmed, p.Found, want)
		}
	}
}

// TestProbeOfAnotherSchemaConfirmsNothing: a probe made for a schema the
// database no longer has (the app migrated since the caller resolved the
// source) reports the new cookie and confirms none of its keys.
func TestProbeOfAnotherSchemaConfirmsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, app := testDB(t, `CREATE TABLE t (id TEXT PRIMARY KEY)`)
	s := attach(t, db, "t", "id", false)
	for _, k := range []string{"a", "b"} {
		if _, err := app.Exec(`INSERT INTO t (id) VALUES (?)`, k); err != nil {
			t.Fatal(err)
		}
	}
	c, err := db.Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Release(c)
	schema, err := c.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Exec(`ALTER TABLE t ADD COLUMN extra INTEGER`); err != nil {
		t.Fatal(err)
	}
	for _, keys := range [][]string{{"a"}, {"a", "b", "c"}} {
		var p Probe
		if err := c.Probe(ctx, s, ProbeOptions{Keys: keys, Schema: schema}, &p); err != nil {
			t.Fatal(err)
		}
		if p.Schema == schema {
			t.Fatalf("the probe read the old schema cookie %d after ALTER TABLE", schema)
		}
		if p.Confirmed || len(p.Found) > 0 {
			t.Fatalf("keys %q: confirmed %v, found %v under a schema the caller did not resolve", keys, p.Confirmed, p.Found)
		}
	}
}

// TestReadInts: the probe's and the head's numbers come back as one text
// column, integers joined by single spaces; anything else is an error,
// never a zero taken for a value.
func TestReadInts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   any
		n    int
		want []int64
		rest string
		bad  bool
	}{
		{in: "1 2 3", n: 3, want: []int64{1, 2, 3}},
		{in: []byte("7 -9223372036854775808 "), n: 2, want: []int64{7, -9223372036854775808}},
		{in: "1 2 -42", n: 2, want: []int64{1, 2}, rest: "-42"},
		{in: "1 2", n: 3, bad: true},
		{in: "1  2", n: 2, bad: true},
		{in: "1 x", n: 2, bad: true},
		{in: "", n: 1, bad: true},
		{in: int64(5), n: 1, bad: true},
		{in: nil, n: 1, bad: true},
		{in: "9223372036854775808", n: 1, bad: true},
	} {
		n := make([]int64, tc.n)
		rest, err := readInts(tc.in, n)
		if (err != nil) != tc.bad || !tc.bad && (!slices.Equal(n, tc.want) || rest != tc.rest) {
			t.Errorf("readInts(%q) = %v %q %v, want %v %q (error %v)", tc.in, n, rest, err, tc.want, tc.rest, tc.bad)
		}
	}
}

// TestHeadReadsEveryValue: the head the probe and Head read holds each
// value of the source's row and log in its own field, and an entry at
// the mark whose tag is no integer is no entry found.
func TestHeadReadsEveryValue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, app := testDBWith(t, Knobs{}, `CREATE TABLE t (id TEXT PRIMARY KEY)`)
	s := attach(t, db, "t", "id", false)
	c, err := db.Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Release(c)
	// An empty log: no newest entry, sequence number and tag 0.
	h, err := c.Head(ctx, s)
	var p0 Probe
	perr := c.Probe(ctx, s, ProbeOptions{Chunk: 8}, &p0)
	if err != nil || perr != nil || h.Seq != 0 || h.Tag != 0 || p0.Head != h || !p0.Tail || len(p0.Logged) != 0 {
		t.Fatalf("empty log: Head = %+v (%v), probe %+v (%v)", h, err, p0, perr)
	}
	for _, k := range []string{"a", "b", "c"} {
		if _, err := app.Exec(`INSERT INTO t (id) VALUES (?)`, k); err != nil {
			t.Fatal(err)
		}
	}
	mustExec := func(q string, args ...any) {
		t.Helper()
		if _, err := app.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	mustExec(`UPDATE `+SourcesTable+` SET log_floor = 2, epoch = 5, spellings_gen = 4, scanned = 0 WHERE id = ?`, s.ID)
	mustExec(`UPDATE ` + s.Log + ` SET tag = -9223372036854775808 WHERE seq = 3`)
	mustExec(`UPDATE ` + s.Log + ` SET tag = 'x' WHERE seq = 1`)
	mustExec(`INSERT INTO ` + s.Spellings + ` (canon, stored) VALUES ('k', 'K')`)
	want := Head{Seq: 3, Tag: -9223372036854775808, Floor: 2, Epoch: 5, SpellingsGen: 4, Scanned: false, HasSpellings: true}
	h, err = c.Head(ctx, s)
	if err != nil || h != want {
		t.Fatalf("Head = %+v (%v), want %+v", h, err, want)
	}
	for after, found := range map[uint64]bool{1: false, 2: true, 3: true, 4: false} {
		var p Probe
		if err := c.Probe(ctx, s, ProbeOptions{After: after, Chunk: 8}, &p); err != nil || p.Head != want || p.AfterFound != found {
			t.Errorf("probe after %d: head %+v, tag found %v (%v); want %+v, %v", after, p.Head, p.AfterFound, err, want, found)
		}
	}
	// A value that is no integer is refused, even text that reads as two.
	for _, set := range []string{`epoch = '7 7'`, `log_floor = 2.5`, `scanned = X'01'`} {
		mustExec(`UPDATE ` + SourcesTable + ` SET log_floor = 2, epoch = 5, spellings_gen = 4, scanned = 0, ` + set)
		if h, err := c.Head(ctx, s); err == nil {
			t.Errorf("%s: Head = %+v", set, h)
		}
		var p Probe
		if err := c.Probe(ctx, s, ProbeOptions{After: 2, Chunk: 8}, &p); err == nil {
			t.Errorf("%s: probe's head %+v", set, p.Head)
		}
	}
	mustExec(`UPDATE ` + SourcesTable + ` SET log_floor = 2, epoch = 5, spellings_gen = 4, scanned = 0`)
	mustExec(`UPDATE ` + s.Log + ` SET tag = '7 7' WHERE seq = 3`)
	if h, err := c.Head(ctx, s); err == nil {
		t.Errorf("a tag of text at the head: Head = %+v", h)
	}
}
