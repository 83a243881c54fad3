package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestProbeReadsLogByRange: the probe reads the log a range of sequence
// numbers at a time. Every entry logged after the caller's generation is
// handed over exactly once and in order, a gap in the numbers (entries
// deleted, wider than a chunk) neither stalls the caller nor skips an
// entry, and Read never passes the head.
func TestProbeReadsLogByRange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, app := testDBWith(t, Knobs{LogChunk: 4}, `CREATE TABLE t (id TEXT)`, `CREATE INDEX t_id ON t (id)`)
	s := attach(t, db, "t", "id", false)

	for i := range 30 {
		if _, err := app.Exec(`INSERT INTO t (id) VALUES (?)`, fmt.Sprintf("k%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// A gap wider than a chunk, in the middle of the log.
	if _, err := app.Exec(`DELETE FROM ` + s.Log + ` WHERE key >= 'k05' AND key < 'k17'`); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 30 {
		if i < 5 || i >= 17 {
			want = append(want, fmt.Sprintf("k%02d", i))
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
	for _, keys := range [][]string{nil, {"k00", "k07", "nope"}} {
		var got []string
		var p Probe
		after := uint64(0)
		for probes := 0; ; probes++ {
			if probes > 100 {
				t.Fatalf("keys %q: the log never read to its head (at %d)", keys, after)
			}
			if err := c.Probe(ctx, s, ProbeOptions{After: after, Chunk: 4, Keys: keys, Schema: schema}, &p); err != nil {
				t.Fatal(err)
			}
			if p.Read > p.Head.Seq || p.Read < after {
				t.Fatalf("read %d after %d, head %d", p.Read, after, p.Head.Seq)
			}
			if p.Read == after {
				break
			}
			got = append(got, p.Logged...)
			after = p.Read
		}
		if after != p.Head.Seq || p.Head.Seq != 30 {
			t.Fatalf("stopped at %d, head %d, want 30", after, p.Head.Seq)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("keys %q: read %q, want %q", keys, got, want)
		}
		if keys != nil && (!p.Confirmed || !slices.Equal(p.Found, []int{0, 1})) {
			t.Fatalf("confirmed %v found %v, want positions 0 and 1 (k00 and k07)", p.Confirmed, p.Found)
		}
	}
}

// TestProbeWholeOrElse: with Whole, a tail that fits the chunk is read
// whole; a tail that does not is read for the entries that may be stored
// spellings only (up to Else), and the keys are confirmed all the same,
// through the spellings table for the keys Spelled names.
func TestProbeWholeOrElse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, app := testDBWith(t, Knobs{LogChunk: 64}, `CREATE TABLE t (id TEXT PRIMARY KEY)`)
	s := attach(t, db, "t", "id", false)
	stored := []string{"a0", "cafe\u0301", "a1", "\u212a-1", "a2", "a3"}
	for _, k := range stored {
		if _, err := app.Exec(`INSERT INTO t (id) VALUES (?)`, k); err != nil {
			t.Fatal(err)
		}
	}
	// A stored spelling the spellings table records (as a scan would).
	if _, err := app.Exec(`INSERT INTO t (id) VALUES (?)`, "nai\u0308ve"); err != nil {
		t.Fatal(err)
	}
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
	keys := []string{"a1", "never", "na\u00efve", "a3"}
	spelled := func(k string) bool { return strings.ContainsFunc(k, func(r rune) bool { return r > 0x7f }) }
	for _, tc := range []struct {
		chunk, els int
		wantLogged []string
		nonASCII   bool
	}{
		{chunk: 7, els: 64, wantLogged: append(slices.Clone(stored), "nai\u0308ve")},
		{chunk: 3, els: 64, wantLogged: []string{"cafe\u0301", "\u212a-1", "nai\u0308ve"}, nonASCII: true},
		{chunk: 3, els: 2, wantLogged: []string{"cafe\u0301"}, nonASCII: true},
		{chunk: 3, els: 0},
	} {
		var p Probe
		o := ProbeOptions{Chunk: tc.chunk, Whole: true, Else: tc.els, Keys: keys, Spellings: true, Spelled: spelled, Schema: schema}
		if err := c.Probe(ctx, s, o, &p); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(p.Logged, tc.wantLogged) || p.NonASCIIOnly != tc.nonASCII {
			t.Errorf("chunk %d, else %d: read %q (only those that may be spellings: %v), want %q (%v)", tc.chunk, tc.els, p.Logged, p.NonASCIIOnly, tc.wantLogged, tc.nonASCII)
		}
		wantRead := uint64(len(tc.wantLogged))
		if tc.nonASCII {
			wantRead = min(uint64(tc.els), p.Head.Seq)
		}
		if p.Read != wantRead {
			t.Errorf("chunk %d, else %d: read up to %d, want %d", tc.chunk, tc.els, p.Read, wantRead)
		}
		if want := []int{0, 2, 3}; !p.Confirmed || !slices.Equal(p.Found, want) {
			t.Errorf("chunk %d, else %d: confirmed %v, found %v; want %v", tc.chunk, tc.els, p.Confirmed, p.Found, want)
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
		if err := c.Probe(ctx, s, ProbeOptions{Keys: keys, Whole: true, Schema: schema}, &p); err != nil {
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
