package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestChunkedScanReadsWhatRowsRead: the chunked scan hands over exactly
// the distinct keys, and counts exactly the NULL, BLOB and too long ids,
// that reading row by row does: keys of every single byte (invalid UTF-8
// included), every byte JSON escapes, the empty key, runs of one key
// longer than a chunk, long keys (read one by one), keys too long to
// stand for any key (counted, never read), random byte strings; at chunk
// sizes that cut everywhere and short-key bounds that send many keys the
// long way.
func TestChunkedScanReadsWhatRowsRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, db := testDB(t, `CREATE TABLE t (id TEXT, body TEXT)`, `CREATE INDEX t_id ON t (id)`)
	var keys []string
	for b := 0; b < 256; b++ {
		keys = append(keys, string([]byte{byte(b)}), fmt.Sprintf("k%cz", b))
	}
	keys = append(keys, "", "", `quote"back\slash/`, "\u2028\u2029", "😀\U0010fffd", "\xed\xa0\x80", "\xf4\x90\x80\x80", "a\x00b")
	for range 50 {
		keys = append(keys, "dup") // a run longer than the small chunks
	}
	for i := range 3 { // longer than the short-key bound, twice each
		keys = append(keys, strings.Repeat("L", 5000)+fmt.Sprint(i), strings.Repeat("L", 5000)+fmt.Sprint(i))
	}
	keys = append(keys, strings.Repeat("é", MaxKeyBytes)) // beyond MaxKeyBytes, within MaxStoredBytes: read
	r := rand.New(rand.NewPCG(11, 12))
	for range 2000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		keys = append(keys, string(b))
	}
	tooLongKeys := []string{strings.Repeat("T", MaxStoredBytes+1), strings.Repeat("U", MaxStoredBytes+1)} // counted, never read
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range append(slices.Clone(keys), tooLongKeys...) {
		if _, err := tx.Exec(`INSERT INTO t (id) VALUES (?)`, k); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if _, err := tx.Exec(`INSERT INTO t (id) VALUES (NULL)`); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range [][]byte{{}, {0}, {0xff}, []byte("blob")} {
		if _, err := tx.Exec(`INSERT INTO t (id) VALUES (?)`, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	src := attach(t, st, "t", "id", false)
	read := func(t *testing.T, st *DB) (got []string, counts ScanCounts) {
		t.Helper()
		counts, err := st.Scan(ctx, src, ScanHooks{
			Begin: func(Head, int64) error { return nil },
			Keys:  func(k []string) error { got = append(got, k...); return nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		return distinct(got), counts
	}
	want, wantCounts := read(t, openStore(t, st.Path.Given, Knobs{NoChunkedScan: true}))
	if !slices.Equal(want, distinct(keys)) || wantCounts != (ScanCounts{Nulls: 3, Blobs: 4, Long: 2}) {
		t.Fatalf("row by row: %d keys, %+v; inserted %d, 3 NULL, 4 BLOB, 2 too long", len(want), wantCounts, len(distinct(keys)))
	}
	for _, tc := range []Knobs{
		{ScanChunk: 1}, {ScanChunk: 7}, {ScanChunk: 50}, {ScanChunk: 51}, {ScanChunk: 4096},
		{ScanChunk: 7, ShortKey: 2}, {ScanChunk: 4096, ShortKey: 1}, {ScanChunk: 100, ShortKey: 4999},
	} {
		t.Run(fmt.Sprintf("chunk=%d,short=%d", tc.ScanChunk, tc.ShortKey), func(t *testing.T) {
			st := openStore(t, st.Path.Given, tc)
			if !chunkable(t, st, src) {
				t.Fatal("the paging statement does not walk the index: the chunked path is not under test")
			}
			got, counts := read(t, st)
			if counts != wantCounts {
				t.Fatalf("counts %+v, want %+v", counts, wantCounts)
			}
			if !slices.Equal(got, want) {
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						t.Fatalf("%d keys, want %d; first difference at %d: %.40q, want %.40q", len(got), len(want), i, got[i], want[i])
					}
				}
				t.Fatalf("%d keys, want %d", len(got), len(want))
			}
		})
	}
}

// TestChunkedScanNeedsTheIndex: without an index on the column, SQLite
// would sort for every chunk, so the scan reads row by row.
func TestChunkedScanNeedsTheIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, db := testDB(t, `CREATE TABLE t (id TEXT, body TEXT)`)
	var want []string
	for i := range 100 {
		k := fmt.Sprintf("k-%03d", i)
		want = append(want, k)
		if _, err := db.Exec(`INSERT INTO t (id) VALUES (?)`, k); err != nil {
			t.Fatal(err)
		}
	}
	src := attach(t, st, "t", "id", true)
	if chunkable(t, st, src) {
		t.Fatal("an unindexed column's paging statement reported as walking an index")
	}
	var got []string
	if _, err := st.Scan(ctx, src, ScanHooks{
		Begin: func(Head, int64) error { return nil },
		Keys:  func(k []string) error { got = append(got, k...); return nil },
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(distinct(got), want) {
		t.Fatalf("read %d keys, want %d", len(got), len(want))
	}
}

// chunkable reports whether SQLite walks the index for src's paging
// statement.
func chunkable(t *testing.T, db *DB, src *Source) bool {
	t.Helper()
	ctx := context.Background()
	c, err := db.Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Release(c)
	return c.walksIndex(ctx, src.scanSQL(">"))
}
