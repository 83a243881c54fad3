package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// TestProbeReadsLogByRange: the probe reads the log a range of sequence
// numbers at a time. Every entry logged after the caller's generation is
// handed over exactly once and in order, a gap in the numbers (entries
// deleted, wider than a chunk) neither stalls the caller nor skips an
// entry, and Read never passes the head.
func TestProbeReadsLogByRange(t *testing.T) {
	ctx := context.Background()
	db, app := testDB(t, `CREATE TABLE t (id TEXT)`, `CREATE INDEX t_id ON t (id)`)
	s := attach(t, db, "t", "id", false)
	defer func(n int) { logChunk = n }(logChunk)
	logChunk = 4

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
	for _, keys := range [][]string{nil, {"k00", "k07", "nope"}} {
		var got []string
		var p Probe
		after := uint64(0)
		for probes := 0; ; probes++ {
			if probes > 100 {
				t.Fatalf("keys %q: the log never read to its head (at %d)", keys, after)
			}
			if err := c.Probe(ctx, s, ProbeOptions{After: after, Keys: keys}, &p); err != nil {
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
		if keys != nil && (!p.Confirmed || !slices.Equal(p.Found, []string{"k00", "k07"})) {
			t.Fatalf("confirmed %v found %q, want k00 and k07", p.Confirmed, p.Found)
		}
	}
}
